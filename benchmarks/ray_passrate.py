"""Pass-rate sampling on Ray: the same sandbox-heavy job on 1 worker and on 2, throughput and CPU per rollout.

    python benchmarks/ray_passrate.py                       # 12 code tasks x 4 rollouts, a local Ray instance
    python benchmarks/ray_passrate.py --count 24 -n 8 --address 10.0.0.1:6379

The tasks are code tasks (../shared/data/tasks/livecodebench_v5.parquet); a loopback model in this
process replies to every rollout with a program that computes for a while and then prints, and each
rollout is scored in the sandbox against the task's tests, so the work is the sandbox's, as in a
real code pass-rate job. Each setting runs `factory passrate --ray` into a fresh run folder (nothing
cached): once as a single process without Ray (the baseline), then sharded over 1 and over 2 Ray
workers (Ray's start and the workers' first imports are not timed: a warm-up run goes first).
Figures per setting: rollouts per second (wall, the merge included), and CPU seconds per
rollout of the workers and their sandboxes (each shard measures its own process and its finished
children, RUN_DIR/shards/last.json). Last, the merge's speed (the one serial step of a sharded stage)
on a synthetic shard store. Written to benchmarks/results/ray_passrate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from results_file import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from loopback_server import LoopbackServer  # noqa: E402

from factory.llm import LLMConfig  # noqa: E402
from factory.passrate.config import PassrateConfig  # noqa: E402
from factory.passrate.job import run_passrate  # noqa: E402
from factory.run_config import FactoryConfig  # noqa: E402
from factory.scale.cluster import connect  # noqa: E402
from factory.scale.config import RayConfig  # noqa: E402
from factory.scale.merge import merge_shard  # noqa: E402
from factory.store import Store  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "ray_passrate.json"
CODE_TASKS = Path(__file__).resolve().parents[2] / "shared" / "data" / "tasks" / "livecodebench_v5.parquet"
# About 40 ms of a core per test case before it answers (wrongly: every test still runs).
PROGRAM = "<answer>\n```py\nimport sys\ntotal = 0\nfor i in range(400000):\n    total += i\nprint(sys.stdin.read()[:0] or 'No')\n```\n</answer>"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=str(CODE_TASKS))
    parser.add_argument("--count", type=int, default=12, help="code tasks sampled from the file")
    parser.add_argument("-n", type=int, default=4, help="rollouts per task")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight per worker")
    parser.add_argument("--address", help="a Ray cluster (default: a local Ray instance on this machine)")
    parser.add_argument("--merge-rows", type=int, default=200_000, help="rows of the merge-speed measurement")
    return parser.parse_args()


def one_setting(args: argparse.Namespace, base_url: str, shards: int | None) -> dict:
    """One fresh run: shards None is the single process without Ray."""
    run_dir = Path(tempfile.mkdtemp(prefix="ray-passrate-"))
    llm = LLMConfig(model="loopback", base_url=base_url, concurrency=args.concurrency)
    settings = PassrateConfig(tasks=args.tasks, domain="code", count=args.count, n=args.n)
    ray = RayConfig(enabled=shards is not None, address=args.address, shards=shards)
    config = FactoryConfig(run_dir=run_dir, llm=llm, passrate=settings, ray=ray)
    cpu_before = own_cpu()
    started = time.perf_counter()
    outcome, summary = run_passrate(config, settings, llm, progress=False)
    seconds = time.perf_counter() - started
    rollouts = summary["rollouts"]
    if shards is None:  # this process and its sandboxes (the loopback model's share is small)
        cpu, nodes = own_cpu() - cpu_before, None
    else:
        last = json.loads((run_dir / "shards" / "last.json").read_text())["shards"]
        cpu = sum(shard["cpu_s"] for shard in last)
        nodes = [{"tasks": shard["counts"]["tasks"], "wall_s": round(shard["wall_s"], 1)} for shard in last]
    shutil.rmtree(run_dir, ignore_errors=True)
    return {
        "workers": shards or "single process, no Ray",
        "rollouts": rollouts,
        "scored": summary["scored"],
        "wall_s": round(seconds, 2),
        "rollouts_per_s": round(rollouts / seconds, 2),
        "cpu_s_per_rollout": round(cpu / rollouts, 3),
        "shards": nodes,
    }


def merge_rate(rows: int) -> dict:
    """Seconds to merge one shard store of `rows` answered rollouts (an llm_calls row of ~2 KB and a
    rollouts row each) into an empty run store, and again (a rerun's merge, which replaces every row)."""
    folder = Path(tempfile.mkdtemp(prefix="ray-merge-"))
    text = "x" * 1000
    with Store.open(folder / "shard") as shard:
        hashes = [f"h{i:09d}" for i in range(rows)]
        shard.insert_rows(
            "llm_calls",
            {
                "request_hash": hashes,
                "stage": ["passrate"] * rows,
                "status": ["ok"] * rows,
                "messages": [text] * rows,
                "response": [text] * rows,
            },
        )
        shard.insert_rows(
            "rollouts",
            {
                "task_id": [f"t{i // 32}" for i in range(rows)],
                "model": ["m"] * rows,
                "sample_index": [i % 32 for i in range(rows)],
                "completion": [text] * rows,
                "request_hash": hashes,
            },
        )
    timings = []
    with Store.open(folder / "main") as main_store:
        for _ in range(2):
            started = time.perf_counter()
            merge_shard(main_store, folder / "shard" / "factory.sqlite")
            timings.append(round(time.perf_counter() - started, 2))
    shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows, "first_merge_s": timings[0], "rows_per_s": round(rows / timings[0]), "again_s": timings[1]}


def own_cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    args = parse_args()
    if not Path(args.tasks).exists():
        sys.exit(f"no task file at {args.tasks}")
    server = LoopbackServer(content=lambda body: PROGRAM, record=False)
    base_url = server.start_in_thread()
    try:
        # Not measured: starting Ray, and the workers' first import of the factory (a warm-up run).
        connect(args.address)
        one_setting(argparse.Namespace(**{**vars(args), "count": 2, "n": 1}), base_url, 2)
        figures = {str(shards or 0): one_setting(args, base_url, shards) for shards in (None, 1, 2)}
    finally:
        server.stop()
    key = f"{args.count} code tasks x {args.n} rollouts, concurrency {args.concurrency}, cpus {os.cpu_count()}"
    report(
        RESULTS, key, {"settings": figures, "address": args.address or "local", "merge": merge_rate(args.merge_rows)}
    )


if __name__ == "__main__":
    main()
