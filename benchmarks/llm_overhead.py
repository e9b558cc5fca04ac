"""Client-side overhead of factory's async LLM client against baselines.

    python benchmarks/llm_overhead.py                      # 10,000 requests, concurrency 256, all clients
    python benchmarks/llm_overhead.py --requests 500 --only factory,aiohttp
    python benchmarks/llm_overhead.py --only factory,aiohttp --repeat 5   # medians of 5 interleaved runs
    python benchmarks/llm_overhead.py --profile --only factory   # also writes a cProfile of the batch

One loopback server (tests/loopback_server.py, its own process) answers every
chat completion after --delay seconds, so wall time above the ideal
(requests / concurrency * delay) is overhead on the client side. Each client runs
the same batch in a fresh worker process of its own, one after another:

- factory: LLMClient.complete_many with a pydantic response model, cache off,
  and its real SQLite call log (checked afterwards: one ok row per request);
- factory-nolog: the same client without a store, so without the call log: the
  difference between the two rows is what the log's durability costs;
- aiohttp: the floor, raw POSTs from one ClientSession (TCPConnector limit = concurrency);
- openai: AsyncOpenAI with its default httpx transport and limits, max_retries=0;
- litellm: litellm.acompletion(model="openai/bench", api_base=..., num_retries=0).

Every client sends the same body (the json_schema response_format our client
sends) and validates each reply into the same pydantic model; the baselines bound
concurrency with an asyncio.Semaphore. Inside each worker: wall time and CPU time
(time.process_time, all threads) of the batch and the client's close, excluding
imports (pydantic is preloaded for all) and setup, which are reported apart; peak
RSS (ru_maxrss). Wall time on a small machine varies by some 10% from run to run:
compare clients within one run, and use --repeat near a threshold. The parent
prints a table, checks the targets (factory within 1.3x the floor's wall time and
under 0.6 ms CPU per request) and writes benchmarks/results/llm_overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "loopback_server.py"
DEFAULT_OUTPUT = ROOT / "benchmarks" / "results" / "llm_overhead.json"
CLIENTS = ("factory", "factory-nolog", "aiohttp", "openai", "litellm")
PACKAGES = ("aiohttp", "openai", "httpx", "litellm", "duckdb", "orjson", "pydantic")
TARGET_WALL_RATIO = 1.3
TARGET_CPU_MS = 0.6
TARGET_CPU_RATIO = 1.3  # issue 31: the client's CPU per request within 1.3x raw aiohttp's
from overhead_clients import CLIENT_CLASSES, prompts  # noqa: E402

MEDIAN_FIELDS = ("import_s", "setup_s", "wall_s", "cpu_s", "cpu_ms_per_request", "rss_before_batch_mib", "peak_rss_mib")


# -- worker: one client, one batch, one JSON line -------------------------------


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def measured_batch(client: Any, args: argparse.Namespace, profiler: cProfile.Profile | None) -> dict[str, Any]:
    conversations = prompts(args.requests)
    started = time.perf_counter()
    await client.open(args.url, args.concurrency)
    setup_s = time.perf_counter() - started
    rss_before = rss_mib()
    if profiler:
        profiler.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    errors = await client.batch(conversations)
    await client.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if profiler:
        profiler.disable()
    return {"setup_s": setup_s, "wall_s": wall, "cpu_s": cpu, "rss_before_batch_mib": rss_before, "errors": errors}


def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    client = CLIENT_CLASSES[args.worker]()
    started = time.perf_counter()
    client.load()
    import_s = time.perf_counter() - started
    profiler = cProfile.Profile() if args.profile_to else None
    figures = asyncio.run(measured_batch(client, args, profiler))
    if profiler:
        profiler.dump_stats(args.profile_to)
    errors = [e for e in figures.pop("errors") if e is not None]
    return {
        "name": args.worker, "note": client.note, "requests": args.requests, "concurrency": args.concurrency,
        "import_s": round(import_s, 3), "setup_s": round(figures["setup_s"], 3), "wall_s": round(figures["wall_s"], 3),
        "cpu_s": round(figures["cpu_s"], 3), "cpu_ms_per_request": round(figures["cpu_s"] * 1000 / args.requests, 4),
        "rss_before_batch_mib": round(figures["rss_before_batch_mib"], 1), "peak_rss_mib": round(peak_rss_mib(), 1),
        "errors": len(errors), "error_samples": sorted(set(errors))[:3], "problems": client.check(args.requests),
    }  # fmt: skip


# -- parent: server, workers, report --------------------------------------------


@contextlib.contextmanager
def loopback(delay: float) -> Iterator[str]:
    """Start tests/loopback_server.py in its own process; yield its base URL; always stop it."""
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--delay", str(delay), "--no-record"], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        url = server.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"loopback server did not start (got {url!r})")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def run_client(name: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--worker", name, "--url", url,
        "--requests", str(args.requests), "--concurrency", str(args.concurrency),
    ]  # fmt: skip
    if args.profile:
        command += ["--profile-to", str(profile_path(args.output, name))]
    print(f"running {name} ...", file=sys.stderr, flush=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=args.worker_timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "failed": f"worker ran past {args.worker_timeout}s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"name": name, "failed": f"worker exit {done.returncode}: {done.stderr.strip()[-2000:]}"}
    return json.loads(lines[-1])


def run_rounds(names: list[str], url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run every client --repeat times, interleaved, against the same server."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for _ in range(args.repeat):
        for name in names:
            runs[name].append(run_client(name, url, args))
    return [summarize(name, runs[name]) for name in names]


def summarize(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One client's figures: the run itself, or medians over repeated runs (all runs kept)."""
    failures = [r["failed"] for r in runs if "failed" in r]
    if failures:
        return {"name": name, "failed": " | ".join(failures)}
    if len(runs) == 1:
        return runs[0]
    summary = {**runs[0], **{f: round(statistics.median(r[f] for r in runs), 4) for f in MEDIAN_FIELDS}}
    summary["errors"] = sum(r["errors"] for r in runs)
    summary["problems"] = sorted({p for r in runs for p in r["problems"]})
    summary["error_samples"] = sorted({e for r in runs for e in r["error_samples"]})[:3]
    summary["runs"] = [{f: r[f] for f in ("wall_s", "cpu_ms_per_request", "peak_rss_mib", "errors")} for r in runs]
    return summary


def profile_path(output: Path, name: str) -> Path:
    return output.with_name(f"{output.stem}_{name}.prof")


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state() -> dict[str, Any]:
    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], capture_output=True, text=True, cwd=ROOT).stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain"))}


def machine_info() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "packages": package_versions(),
        "repo": git_state(),
    }


def add_ratios(results: list[dict[str, Any]], ideal_s: float) -> None:
    base = next((r for r in results if r["name"] == "aiohttp" and "wall_s" in r), None)
    floor, floor_cpu = (base["wall_s"], base["cpu_ms_per_request"]) if base else (None, None)
    for r in results:
        if "wall_s" in r:
            r["ratio_to_floor"] = round(r["wall_s"] / floor, 3) if floor else None
            r["cpu_ratio_to_floor"] = round(r["cpu_ms_per_request"] / floor_cpu, 3) if floor_cpu else None
            r["ratio_to_ideal"] = round(r["wall_s"] / ideal_s, 3)


def targets(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    ours = next((r for r in results if r["name"] == "factory" and "wall_s" in r), None)
    if ours is None:
        return None
    wall_ok = ours["ratio_to_floor"] is not None and ours["ratio_to_floor"] <= TARGET_WALL_RATIO
    return {
        "wall_ratio_max": TARGET_WALL_RATIO,
        "wall_ratio": ours["ratio_to_floor"],
        "wall_met": wall_ok,
        "cpu_ms_max": TARGET_CPU_MS,
        "cpu_ms": ours["cpu_ms_per_request"],
        "cpu_met": ours["cpu_ms_per_request"] < TARGET_CPU_MS,
        "cpu_ratio_max": TARGET_CPU_RATIO,
        "cpu_ratio": ours["cpu_ratio_to_floor"],
        "cpu_ratio_met": ours["cpu_ratio_to_floor"] is not None and ours["cpu_ratio_to_floor"] <= TARGET_CPU_RATIO,
        "clean": ours["errors"] == 0 and not ours["problems"],
    }


def fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(results: list[dict[str, Any]], ideal_s: float, repeat: int) -> None:
    print(f"\nideal wall time (requests / concurrency * delay): {ideal_s:.2f} s")
    if repeat > 1:
        print(f"figures are medians of {repeat} runs per client (errors: total over the runs)")
    header = f"{'client':<13} {'wall s':>8} {'x floor':>8} {'x ideal':>8} {'CPU ms/req':>11} {'peak MiB':>9} {'import s':>9} {'errors':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        if "failed" in r:
            print(f"{r['name']:<13} FAILED: {r['failed'][-600:]}")
            continue
        print(
            f"{r['name']:<13} {r['wall_s']:>8.2f} {fmt(r['ratio_to_floor'], '.2f'):>8} {r['ratio_to_ideal']:>8.2f}"
            f" {r['cpu_ms_per_request']:>11.3f} {r['peak_rss_mib']:>9.1f} {r['import_s']:>9.2f} {r['errors']:>7}"
        )
        for problem in r["problems"] + r["error_samples"]:
            print(f"{'':<13} ! {problem}")


def print_targets(verdict: dict[str, Any] | None) -> None:
    if verdict is None:
        print("\ntargets: not checked (factory was not run)")
        return
    wall = "met" if verdict["wall_met"] else "MISSED"
    cpu = "met" if verdict["cpu_met"] else "MISSED"
    print(f"\ntarget wall <= {TARGET_WALL_RATIO}x floor: {wall} ({fmt(verdict['wall_ratio'], '.2f')}x)")
    print(f"target CPU < {TARGET_CPU_MS} ms/request: {cpu} ({verdict['cpu_ms']:.3f} ms)")
    ratio = "met" if verdict["cpu_ratio_met"] else "MISSED"
    print(f"target CPU <= {TARGET_CPU_RATIO}x the floor's per request: {ratio} ({fmt(verdict['cpu_ratio'], '.2f')}x)")
    if not verdict["clean"]:
        print("factory client had errors or call-log problems (see above)")


def print_profiles(output: Path, names: list[str], top: int = 25) -> None:
    for name in names:
        path = profile_path(output, name)
        if path.exists():
            text = io.StringIO()
            pstats.Stats(str(path), stream=text).sort_stats("tottime").print_stats(top)
            print(f"\n== cProfile of {name} (by own time; {path}) ==\n{text.getvalue()}")


def run_all(args: argparse.Namespace) -> None:
    names = args.only.split(",") if args.only else list(CLIENTS)
    unknown = set(names) - set(CLIENTS)
    if unknown:
        sys.exit(f"unknown client(s): {', '.join(sorted(unknown))}; choose from {', '.join(CLIENTS)}")
    info = machine_info()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with loopback(args.delay) as url:
        results = run_rounds(names, url, args)
    ideal_s = args.requests / args.concurrency * args.delay
    add_ratios(results, ideal_s)
    verdict = targets(results)
    print_table(results, ideal_s, args.repeat)
    print_targets(verdict)
    if args.profile:
        print_profiles(args.output, names)
    setup = {"requests": args.requests, "concurrency": args.concurrency, "delay_s": args.delay,
             "ideal_wall_s": round(ideal_s, 3), "repeat": args.repeat, "profiled": args.profile, "server": "tests/loopback_server.py"}  # fmt: skip
    report = {"timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": info,
              "setup": setup, "clients": {r["name"]: r for r in results}, "targets": verdict}  # fmt: skip
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nresults: {args.output}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--delay", type=float, default=0.1, help="server seconds before each reply")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(CLIENTS)}")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--repeat", type=int, default=1, help="runs per client (interleaved); report medians")
    parser.add_argument("--profile", action="store_true", help="cProfile each batch (inflates its figures)")
    parser.add_argument("--worker-timeout", type=float, default=1800, help="seconds before a worker is abandoned")
    parser.add_argument("--worker", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--profile-to", help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.worker:
        print(json.dumps(run_worker(args)), flush=True)
    else:
        run_all(args)


if __name__ == "__main__":
    main()
