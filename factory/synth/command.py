"""`factory corpus build` and `factory tasks expand`: the offline corpus and harder QA tasks made over it.

    factory corpus build [--out geo.jsonl]
    factory tasks expand --corpus geo --depth 4 --width 3 --count 30 --out tasks.jsonl \\
        [--seeds seeds.jsonl] [--decontaminate eval.jsonl ...] [--closed-book-model M --base-url U]
    factory tasks expand --corpus my_corpus.jsonl --seeds seeds.jsonl --depth 3 --model M --out tasks.jsonl
        (your own corpus: an LLM describes the entities, synth/llm_depth.py)

`tasks expand` writes the kept tasks (rows `factory.tasks.load_tasks` reads; provenance in
`extra_info`) and, beside them, `<out>.report.jsonl` with every candidate's verdicts, and
prints the funnel and the counts per gate.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus import NAMES, build_corpus, default_corpus_path
from ..errors import FactoryError
from .closed_book import ClosedBookConfig
from .expand import ExpandConfig, ExpandResult, expand
from .outputs import write_outputs
from .vary import add_vary_parser

if TYPE_CHECKING:
    from ..run_config import FactoryConfig


def add_synth_parsers(subparsers: Any) -> None:
    corpus = subparsers.add_parser("corpus", help="build the offline geo corpus the local web_search can use")
    corpus_commands = corpus.add_subparsers(dest="corpus_command", required=True, metavar="ACTION", help="build")
    build = corpus_commands.add_parser("build", help=f"write the corpus as JSONL (default: {default_corpus_path()})")
    build.add_argument("--out", type=Path, help="where to write it (default: the place --corpus geo finds)")
    build.set_defaults(func=cmd_corpus_build)

    tasks = subparsers.add_parser("tasks", help="make harder tasks: multi-hop and composed QA, math/code variants")
    task_commands = tasks.add_subparsers(dest="tasks_command", required=True, metavar="ACTION", help="expand, vary")
    from ..cli_options import add_llm_options, sets_config
    from ..corpus.search import with_corpus_search

    ex = task_commands.add_parser(
        "expand", help="synthesize multi-hop QA tasks over the geo corpus (or your own with --model), with gates"
    )
    add_llm_options(ex)  # --model: the describer over your own corpus; --base-url serves it or the closed-book model
    ex.add_argument("--corpus", default="geo", help="'geo' (built on first use) or a JSONL/parquet corpus file")
    ex.add_argument("--seeds", type=Path, help="QA seed questions (JSONL/parquet) naming a country or capital "
                    "(geo) or an entity your corpus has a page for (with --model)")  # fmt: skip
    ex.add_argument("--depth", type=int, default=4, help="most dependent lookups of a depth task (default 4)")
    ex.add_argument("--min-depth", type=int, default=2, help="fewest lookups of a depth task (default 2)")
    ex.add_argument("--width", type=int, default=0, help="sub-questions of a width task (0: none; default 0)")
    ex.add_argument("--count", type=int, default=20, help="tasks to keep (default 20)")
    ex.add_argument("--seed", type=int, default=0, help="random seed of the draws (default 0)")
    ex.add_argument("--top-k", type=int, default=5, help="a hop's page must be in this many search results")
    ex.add_argument("--decontaminate", type=Path, nargs="+", default=[], metavar="EVAL", help="evaluation sets")
    ex.add_argument("--closed-book-model", help="a no-tool model: tasks it answers too often are dropped")
    ex.add_argument("--closed-book-samples", type=int, default=4, help="no-tool answers per task (default 4)")
    ex.add_argument("--max-pass-rate", type=float, default=0.3, help="closed-book pass rate above this drops")
    ex.add_argument("--out", type=Path, required=True, help="the kept tasks, JSONL")
    ex.set_defaults(func=cmd_tasks_expand, run_dir_default="outputs/expand", takes_run_config=True)
    sets_config(ex, finish=with_corpus_search)
    add_vary_parser(task_commands)


def cmd_corpus_build(args: argparse.Namespace) -> int:
    path = build_corpus(args.out, force=True)
    lines = sum(1 for _ in path.open("rb"))
    print(f"corpus: {lines} documents -> {path}")
    return 0


def expand_config(args: argparse.Namespace) -> ExpandConfig:
    closed = None
    if args.closed_book_model:
        closed = ClosedBookConfig(model=args.closed_book_model, base_url=args.base_url,
                                  samples=args.closed_book_samples, max_pass_rate=args.max_pass_rate,
                                  run_dir=args.out.with_name(args.out.stem + ".closed_book"))  # fmt: skip
    elif args.base_url and not args.model:
        raise FactoryError("--base-url needs --closed-book-model or --model (the model served there)")
    for path in [args.seeds, *args.decontaminate]:
        if path is not None and not path.is_file():
            raise FactoryError(f"{path}: no such file")
    return ExpandConfig(corpus=args.corpus, seeds=args.seeds, depth=args.depth, min_depth=args.min_depth,
                        width=args.width, count=args.count, seed=args.seed, top_k=args.top_k,
                        decontaminate=args.decontaminate, closed_book=closed)  # fmt: skip


def cmd_tasks_expand(args: argparse.Namespace, run_config: FactoryConfig) -> int:
    try:
        config = expand_config(args)
    except ValueError as exc:  # pydantic: a setting out of range
        raise FactoryError(f"tasks expand: {' '.join(str(exc).split())[:200]}") from None
    result = run_expand(args, config, run_config)
    report = write_outputs(result, args.out)
    print(result.funnel())
    summary = result.summary()
    print(f"hops (kept): {summary['hops_kept']}; by kind: {summary['by_kind']}")
    for gate, reasons in summary["dropped_by_reason"].items():
        print(f"  dropped by {gate}: " + ", ".join(f"{n} {reason}" for reason, n in reasons.items()))
    print(f"tasks: {len(result.kept)} -> {args.out}; every candidate's verdicts -> {report}")
    return 0


def run_expand(args: argparse.Namespace, config: ExpandConfig, run_config: FactoryConfig) -> ExpandResult:
    """The geo corpus's structured path, or (a corpus file and --model) LLM descriptions over it."""
    if not args.model:
        return expand(config)
    if args.corpus in NAMES:
        raise FactoryError("--model describes entities of your own corpus; --corpus geo uses its facts (drop --model)")
    from .llm_depth import expand_over_corpus

    return expand_over_corpus(config, run_config)
