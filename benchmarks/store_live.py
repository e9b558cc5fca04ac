"""What reading a running run costs it, and what a query costs once the store changed (factory/store).

    python benchmarks/store_live.py                       # 2,000 calls x 3 interleaved repeats, 100k-row queries
    python benchmarks/store_live.py --requests 500 --repeat 1 --rows 20000

A: the same smoke batch (a loopback server in this process answers after --delay s, concurrency 64, a
   fresh folder each time) alone, and with a reader in another process that runs `factory calls --json`'s
   summary on the live store every 0.2 s (the baseline is the batch alone). Median wall seconds, the
   ratio to the baseline, and how many looks the reader made and whether every look added up.
B: on a store whose call log holds --rows rows: the summary query once another process committed a row
   (the copy of llm_calls is taken again), the same query with nothing changed (the copy is reused), and a
   point lookup of one row by key straight from SQLite (what the call log's cache does per request).

Figures are printed and written to benchmarks/results/store_live.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from loopback_server import Action, LoopbackServer  # noqa: E402
from results_file import report  # noqa: E402

from factory.llm.call_summary import summarize_query  # noqa: E402
from factory.run_config import FactoryConfig  # noqa: E402
from factory.smoke import run_smoke  # noqa: E402
from factory.store import STORE_FILENAME, Store  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "store_live.json"
READER = """
import json, sys, time
from pathlib import Path
from factory.llm.call_summary import summarize_calls
run_dir, looks, whole = Path(sys.argv[1]), 0, 0
while not (run_dir / "factory.sqlite").exists():
    time.sleep(0.01)
while not (run_dir / "stop").exists():
    summary = summarize_calls(run_dir)
    looks += 1
    whole += summary["calls"] == summary["ok"] + sum(summary["errors"].values())
    time.sleep(0.2)
print(json.dumps({"looks": looks, "looks_that_add_up": whole}))
"""


def one_batch(base_url: str, requests: int, with_reader: bool) -> tuple[float, dict | None]:
    run_dir = Path(tempfile.mkdtemp(prefix="store-bench-"))
    reader = (
        subprocess.Popen([sys.executable, "-c", READER, str(run_dir)], stdout=subprocess.PIPE, text=True)
        if with_reader
        else None
    )
    config = FactoryConfig(run_dir=run_dir)
    config.llm.model, config.llm.base_url, config.llm.concurrency = "bench", base_url, 64
    config.smoke.n = requests
    started = time.perf_counter()
    outcome = run_smoke(config, progress=False)
    seconds = time.perf_counter() - started
    assert all(r.ok for r in outcome.results)
    looks = None
    if reader is not None:
        (run_dir / "stop").touch()
        looks = json.loads(reader.communicate(timeout=120)[0])
    shutil.rmtree(run_dir, ignore_errors=True)
    return seconds, looks


def batch_figures(requests: int, repeat: int, delay: float) -> dict:
    server = LoopbackServer(default=Action(delay_s=delay), record=False)
    server.start_in_thread()
    walls: dict[str, list[float]] = {"alone": [], "with_a_reader": []}
    looks = []
    try:
        one_batch(server.base_url, requests, False)  # warm-up: imports, the first store, the server
        for _ in range(repeat):  # interleaved, so drift on a shared machine hits both alike
            walls["alone"].append(one_batch(server.base_url, requests, False)[0])
            seconds, seen = one_batch(server.base_url, requests, True)
            walls["with_a_reader"].append(seconds)
            looks.append(seen)
    finally:
        server.stop()
    base = statistics.median(walls["alone"])
    figures = {name: {"median_wall_s": round(statistics.median(w), 3), "ratio_to_alone":
                      round(statistics.median(w) / base, 3), "runs": [round(x, 3) for x in w]}
               for name, w in walls.items()}  # fmt: skip
    figures["reader_looks"] = looks
    return figures


def query_figures(rows: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="store-query-"))
    store = Store.open(folder)
    kinds = ["ok"] * 9 + ["error"]
    store.insert_rows("llm_calls", {
        "request_hash": [f"h{i}" for i in range(rows)], "run_id": ["r"] * rows, "stage": ["s"] * rows,
        "model": ["m"] * rows, "messages": ["x" * 1000] * rows, "status": [kinds[i % 10] for i in range(rows)],
        "error_kind": [None if i % 10 else "server" for i in range(rows)], "attempts": [1] * rows,
        "prompt_tokens": [100] * rows, "completion_tokens": [50] * rows, "latency_s": [0.5] * rows})  # fmt: skip
    reader = Store.open(folder, read_only=True)
    changed, unchanged, lookups = [], [], []
    for i in range(5):
        store.execute(
            "INSERT INTO llm_calls (request_hash, status) VALUES (?, 'ok')", [f"new{i}"]
        )  # another connection
        started = time.perf_counter()
        summarize_query(reader.query)
        changed.append(time.perf_counter() - started)
        started = time.perf_counter()
        summarize_query(reader.query)
        unchanged.append(time.perf_counter() - started)
        started = time.perf_counter()
        reader.lookup("SELECT response FROM llm_calls WHERE request_hash = ?", [f"h{i * 7}"])
        lookups.append(time.perf_counter() - started)
    size = (folder / STORE_FILENAME).stat().st_size
    reader.close()
    store.close()
    shutil.rmtree(folder, ignore_errors=True)
    ms = lambda values: round(statistics.median(values) * 1000, 2)  # noqa: E731
    return {"llm_calls_rows": rows, "summary_after_a_commit_ms": ms(changed), "summary_unchanged_ms": ms(unchanged),
            "point_lookup_ms": ms(lookups), "file_mb": round(size / 2**20, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    figures = {"batch": batch_figures(args.requests, args.repeat, args.delay), "queries": query_figures(args.rows),
               "settings": vars(args), "cpus": os.cpu_count()}  # fmt: skip
    report(RESULTS, f"smoke x{args.requests}, concurrency 64, delay {args.delay}s", figures)


if __name__ == "__main__":
    main()
