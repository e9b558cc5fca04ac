"""Filters at scale: the full built-in set in DuckDB vs the same logic as a plain Python loop.

    python benchmarks/filter_scale.py                      # 100k, 300k, 1M rows
    python benchmarks/filter_scale.py --sizes 20000 --baseline-cap 20000

For each size, three fresh subprocesses (so each peak RSS is its own):
  generate  synthetic trajectories of both paths, built in SQL (benchmarks/filter_scale_data.py);
  filter    run_filters with every built-in, then an export of the kept rows to parquet
            (COPY of trajectories joined with `curation`);
  baseline  the same filter logic in Python over rows fetched in batches
            (benchmarks/filter_scale_baseline.py), on every row by default (1M rows: ~2.5 min,
            ~6 GiB); with --baseline-cap N on at most N rows spread over the table, its time scaled
            linearly to the full size (said in the results).
Results: benchmarks/results/filter_scale.json. Stores live in benchmarks/filter_scale.tmp/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

MEMORY_LIMIT = "1GB"  # DuckDB's buffer pool; the rest of the process (Python, indexes) comes on top
THREADS = 2

BENCH_FILTERS = {
    "filters": [
        {"name": "correct", "kind": "correctness"},
        {"name": "complex", "kind": "complexity", "min_tool_calls": 5},
        {"name": "reflects", "kind": "reflection"},
        {"name": "no_repeats", "kind": "redundancy", "similarity": 0.9},
        {"name": "unique", "kind": "dedup", "threshold": 0.8},
        {"name": "hard", "kind": "pass_rate", "model": "policy", "missing": "keep", "min_samples": 8},
        {"name": "upsample", "kind": "upsample", "weight": 2.0},
        {"name": "split", "kind": "split", "splits": {"sft": 0.8, "rl": 0.2}},
    ]
}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_store(folder: Path):
    from factory.store import Store

    store = Store.open(folder)
    store.duck_execute(f"SET memory_limit = '{MEMORY_LIMIT}'")  # the DuckDB the queries run in (copies spill past it)
    store.duck_execute(f"SET threads = {THREADS}")
    store.duck_execute("SET preserve_insertion_order = false")  # lets COPY and CREATE TABLE AS stream
    store.duck_execute("SET enable_progress_bar = false")
    return store


def child_generate(folder: Path, n: int) -> dict:
    from filter_scale_data import generate  # beside this file

    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open_store(folder) as store:
        sizes = generate(store, n)
    return {"seconds": time.perf_counter() - started, "peak_rss_mib": peak_rss_mib(), **sizes,
            "db_bytes": (folder / "factory.sqlite").stat().st_size}  # fmt: skip


def child_filter(folder: Path, n: int) -> dict:
    from factory.filters import format_funnel, parse_filters, run_filters

    config = parse_filters(BENCH_FILTERS["filters"], "benchmark")
    with open_store(folder) as store:
        started = time.perf_counter()
        report = run_filters(store, config=config)
        filtered = time.perf_counter() - started
        started = time.perf_counter()
        rerun = run_filters(store, config=config)  # nothing changed: nothing is judged again
        rerun_s = time.perf_counter() - started
    with open_store(folder) as store:  # the filters' store reads no host file from then on: a new one writes
        export_s, exported = export_parquet(store, folder / "export.parquet")
    print(format_funnel(report), file=sys.stderr)
    return {
        "filter_seconds": filtered, "export_seconds": export_s, "exported_rows": exported,
        "rerun_unchanged_seconds": rerun_s, "rerun_judged": sum(o.judged for o in rerun.filters),
        "per_filter_seconds": {o.name: round(o.seconds, 2) for o in report.filters},
        "funnel_report_seconds": round(filtered - sum(o.seconds for o in report.filters), 2),  # counts, removals
        "dropped": {o.name: o.dropped for o in report.filters}, "kept": report.kept,
        "peak_rss_mib": peak_rss_mib(),
    }  # fmt: skip


def export_parquet(store, path: Path) -> tuple[float, int]:
    """The kept rows with their weight and split, as the exporter would write them."""
    started = time.perf_counter()
    store.duck_execute(f"""COPY (
        SELECT t.trajectory_id, t.source, t.task_id, t.persona_id, t.conversations, t.turns, t.prompt, t.completion,
               t.observation_spans, coalesce(c.weight, 1.0) AS weight, c.split
        FROM trajectories t LEFT JOIN curation c USING (trajectory_id) WHERE coalesce(c.keep, true)
    ) TO '{path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE_BYTES '32MB')""")  # rows are ~10 KB
    rows = store.query(f"SELECT count(*) FROM read_parquet('{path}')")[0][0]
    return time.perf_counter() - started, rows


def child_baseline(folder: Path, n: int, cap: int) -> dict:
    from filter_scale_baseline import run_baseline  # beside this file

    with open_store(folder) as store:
        outcome = run_baseline(store, n, cap, BENCH_FILTERS["filters"])
    return {**outcome, "peak_rss_mib": peak_rss_mib()}


def run_child(phase: str, folder: Path, n: int, cap: int) -> dict:
    command = [sys.executable, __file__, "--child", phase, "--folder", str(folder), "--sizes", str(n),
               "--baseline-cap", str(cap)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{phase} {n} failed:\n{done.stderr[-3000:]}")
    sys.stderr.write(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(n: int, cap: int, workdir: Path) -> dict:
    folder = workdir / str(n)
    shutil.rmtree(folder, ignore_errors=True)
    generated = run_child("generate", folder, n, cap)
    print(f"[{n}] generated in {generated['seconds']:.1f}s ({generated['db_bytes'] / 2**20:.0f} MiB store)", flush=True)
    filtered = run_child("filter", folder, n, cap)
    print(
        f"[{n}] filters {filtered['filter_seconds']:.1f}s, export {filtered['export_seconds']:.1f}s, "
        f"peak {filtered['peak_rss_mib']:.0f} MiB",
        flush=True,
    )
    baseline = run_child("baseline", folder, n, cap)
    print(
        f"[{n}] python baseline {baseline['seconds_full']:.1f}s"
        f"{' (extrapolated from %d rows)' % baseline['rows'] if baseline['extrapolated'] else ''}, "
        f"peak {baseline['peak_rss_mib']:.0f} MiB",
        flush=True,
    )
    shutil.rmtree(folder, ignore_errors=True)
    if not baseline["extrapolated"]:  # same rows: both must drop (nearly) the same numbers
        baseline["dropped_by_duckdb"] = filtered["dropped"]
    return {
        "rows": n,
        "generate": generated,
        "duckdb": filtered,
        "python_baseline": baseline,
        "speedup_filters": round(baseline["seconds_full"] / filtered["filter_seconds"], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument(
        "--baseline-cap", type=int, default=0, help="most rows the Python loop runs on (0: all of them, the default)"
    )
    parser.add_argument("--workdir", type=Path, default=HERE / "filter_scale.tmp")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "filter_scale.json")
    parser.add_argument("--child", choices=["generate", "filter", "baseline"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        phases = {
            "generate": lambda: child_generate(args.folder, args.sizes[0]),
            "filter": lambda: child_filter(args.folder, args.sizes[0]),
            "baseline": lambda: child_baseline(args.folder, args.sizes[0], args.baseline_cap or args.sizes[0]),
        }
        print(json.dumps(phases[args.child]()))
        return
    started_load = os.getloadavg()
    results = [measure(n, args.baseline_cap or n, args.workdir) for n in args.sizes]
    summary = {
        "benchmark": "filter_scale", "machine": {"cpus": THREADS, "python": platform.python_version(),
                                                 "duckdb_memory_limit": MEMORY_LIMIT, "duckdb_threads": THREADS},
        "filters": BENCH_FILTERS["filters"], "sizes": results,
        "notes": "Times in seconds, memory as peak RSS of a fresh process per phase. The Python baseline runs "
                 "on every row unless --baseline-cap was given; when capped its time is scaled "
                 "linearly to the full size (python_baseline.extrapolated), and its drop counts are those of "
                 "the subset (dedup finds few pairs in a 1-in-N sample). Uncapped, both drop the same rows "
                 "(dedup may differ by a few: the two MinHash implementations hash differently). The machine "
                 "is shared: load_average says how busy it was.",
        "load_average": {"start": started_load, "end": os.getloadavg()},
    }  # fmt: skip
    peaks = [r["duckdb"]["peak_rss_mib"] for r in results]
    summary["targets"] = {
        "speedup_at_largest": results[-1]["speedup_filters"],
        "speedup_goal": 10,
        "peak_rss_mib_max": max(peaks),
        "peak_goal_mib": 2048,
        "peak_growth_largest_over_smallest": round(peaks[-1] / peaks[0], 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    for r in results:
        print(
            f"{r['rows']:>9} rows: duckdb filters {r['duckdb']['filter_seconds']:.1f}s "
            f"(peak {r['duckdb']['peak_rss_mib']:.0f} MiB), export {r['duckdb']['export_seconds']:.1f}s; "
            f"python {r['python_baseline']['seconds_full']:.1f}s "
            f"(peak {r['python_baseline']['peak_rss_mib']:.0f} MiB); "
            f"speedup {r['speedup_filters']}x"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
