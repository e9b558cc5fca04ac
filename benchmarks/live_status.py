"""What publishing a run's live status costs the batch (factory/store/live.py).

    python benchmarks/live_status.py                  # 2,000 calls x 3 interleaved repeats, 100k-row snapshot
    python benchmarks/live_status.py --requests 500 --repeat 1 --rows 20000

A: the same smoke batch (a loopback server in this process answers after --delay s, concurrency 64,
   cache off by a fresh folder each time) with the snapshot written only at the start and the end
   (FACTORY_STATUS_INTERVAL_S=0: the baseline), every 2 s (the default) and every 0.05 s (40x the
   default, a stress case). Median wall seconds and the ratio to the baseline, same process.
B: the time one snapshot takes (its queries and the atomic write) on a store whose call log holds
   --rows rows: how long the publisher's cursor reads beside the batch every period.

Figures are printed and written to benchmarks/results/live_status.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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
from factory.store import Store  # noqa: E402
from factory.store.live import INTERVAL_ENV, StatusPublisher  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "live_status.json"
INTERVALS = {"start_and_end_only": "0", "every_2s_default": "2", "every_0.05s_stress": "0.05"}


def one_batch(base_url: str, requests: int, interval: str) -> float:
    os.environ[INTERVAL_ENV] = interval
    run_dir = tempfile.mkdtemp(prefix="live-bench-")
    config = FactoryConfig(run_dir=run_dir)
    config.llm.model, config.llm.base_url, config.llm.concurrency = "bench", base_url, 64
    config.smoke.n = requests
    started = time.perf_counter()
    outcome = run_smoke(config, progress=False)
    seconds = time.perf_counter() - started
    assert all(r.ok for r in outcome.results)
    shutil.rmtree(run_dir, ignore_errors=True)
    return seconds


def batch_figures(requests: int, repeat: int, delay: float) -> dict:
    server = LoopbackServer(default=Action(delay_s=delay), record=False)
    server.start_in_thread()
    walls: dict[str, list[float]] = {name: [] for name in INTERVALS}
    try:
        one_batch(server.base_url, requests, "0")  # warm-up: imports, the first DuckDB file, the server
        for _ in range(repeat):  # interleaved, so drift on a shared machine hits every setting alike
            for name, interval in INTERVALS.items():
                walls[name].append(one_batch(server.base_url, requests, interval))
    finally:
        server.stop()
        os.environ.pop(INTERVAL_ENV, None)
    base = statistics.median(walls["start_and_end_only"])
    return {name: {"median_wall_s": round(statistics.median(w), 3), "ratio_to_baseline":
                   round(statistics.median(w) / base, 3), "runs": [round(x, 3) for x in w]}
            for name, w in walls.items()}  # fmt: skip


def snapshot_figures(rows: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="live-snap-"))
    store = Store.open(folder)
    kinds = ["ok"] * 9 + ["error"]
    store.insert_rows("llm_calls", {
        "request_hash": [f"h{i}" for i in range(rows)], "run_id": ["r"] * rows, "stage": ["s"] * rows,
        "model": ["m"] * rows, "messages": ["x" * 1000] * rows, "status": [kinds[i % 10] for i in range(rows)],
        "error_kind": [None if i % 10 else "server" for i in range(rows)], "attempts": [1] * rows,
        "prompt_tokens": [100] * rows, "completion_tokens": [50] * rows, "latency_s": [0.5] * rows})  # fmt: skip
    with store._lock:
        cursor = store.con.cursor()
    publisher = StatusPublisher(folder, {"run_id": "r", "command": "bench"}, cursor, summarize_query, 0)
    publisher.start()
    times = []
    for _ in range(10):
        started = time.perf_counter()
        publisher.publish("running")
        times.append(time.perf_counter() - started)
    publisher.finish("done")
    store.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "llm_calls_rows": rows,
        "median_ms": round(statistics.median(times) * 1000, 2),
        "max_ms": round(max(times) * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.02)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    figures = {"batch": batch_figures(args.requests, args.repeat, args.delay), "snapshot": snapshot_figures(args.rows),
               "settings": vars(args), "cpus": os.cpu_count()}  # fmt: skip
    report(RESULTS, f"smoke x{args.requests}, concurrency 64, delay {args.delay}s", figures)


if __name__ == "__main__":
    main()
