"""Task synthesis figures: candidates made, dropped per gate and reason, kept, hop histogram, per kind.

    python benchmarks/task_synthesis.py                      # geo corpus, depth 2-4, width 3, 100 tasks
    python benchmarks/task_synthesis.py --count 300 --depth 5 --decontaminate eval.jsonl
    python benchmarks/task_synthesis.py --closed-book-model M --base-url http://host:8000/v1

Offline and model-free unless a closed-book model is named (that gate is recorded as not run
otherwise). Prints the figures and writes them to benchmarks/results/task_synthesis.json,
keyed by the settings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import save  # noqa: E402

from factory.corpus import build_corpus  # noqa: E402
from factory.synth.closed_book import ClosedBookConfig  # noqa: E402
from factory.synth.expand import ExpandConfig, expand  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "task_synthesis.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decontaminate", type=Path, nargs="*", default=[])
    parser.add_argument("--closed-book-model")
    parser.add_argument("--base-url")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        corpus = build_corpus(Path(folder) / "geo.jsonl")
        built = time.perf_counter() - started
        closed = None
        if args.closed_book_model:
            closed = ClosedBookConfig(model=args.closed_book_model, base_url=args.base_url, run_dir=Path(folder) / "cb")
        config = ExpandConfig(corpus=str(corpus), depth=args.depth, width=args.width, count=args.count, seed=args.seed,
                              decontaminate=args.decontaminate, closed_book=closed)  # fmt: skip
        started = time.perf_counter()
        result = expand(config)
        seconds = time.perf_counter() - started
        documents = sum(1 for _ in corpus.open())
    figures = {**result.summary(), "corpus_documents": documents, "corpus_build_s": round(built, 2),
               "expand_s": round(seconds, 2), "funnel": result.funnel()}  # fmt: skip
    key = f"geo depth<={args.depth} width={args.width} count={args.count} seed={args.seed}"
    key += f" closed_book={args.closed_book_model}" if args.closed_book_model else ""
    save(RESULTS, key, figures)
    print(json.dumps(figures, indent=2))
    print(f"-> {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
