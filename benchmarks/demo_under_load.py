"""README command 1 (`factory run -c examples/pipeline.yaml`) on a quiet machine and beside a CPU burner.

    python benchmarks/demo_under_load.py                  # quiet, then beside 2 busy-loop processes
    python benchmarks/demo_under_load.py --burners 4      # a busier machine
    python benchmarks/demo_under_load.py --old-settings   # also the settings before streaming and free-core threads

The embedded model used to stall on a busy machine: llama.cpp's default thread count
fought the other work for the cores, each reply ran past llm.timeout_s while still
decoding and was sent again from zero. This runs the whole demo, as a user would, in a
fresh run folder per condition, and reports whether every stage finished, the wall
time, the calls and HTTP attempts behind them (resends = attempts - calls), the calls
that ended in a time-out, and the thread count the embedded model chose. Results go to
benchmarks/results/demo_under_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from results_file import report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "demo_under_load.json"
OLD_SETTINGS = {"stream": False, "timeout_s": 300}  # and llama.cpp's own thread count (every core)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "pipeline.yaml")
    parser.add_argument("--burners", type=int, default=2, help="busy-loop processes beside the loaded run")
    parser.add_argument("--limit-s", type=float, default=3600, help="a run still going after this counts as stalled")
    parser.add_argument("--skip-quiet", action="store_true")
    parser.add_argument("--old-settings", action="store_true", help="also run loaded with the old llm settings")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def demo_config(source: Path, work: Path, old: bool) -> Path:
    """The README's config with its run folder (and the folder it publishes to) moved under `work`."""
    config = yaml.safe_load(source.read_text())
    config["run_dir"] = str(work / "run")
    config["pipeline"]["publish"]["to"] = str(work / "hub")
    if old:
        config["llm"] = {**config.get("llm", {}), **OLD_SETTINGS, "local": {"threads": os.cpu_count()}}
    path = work / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def burn(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def run_demo(config: Path, limit_s: float) -> dict:
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "factory.cli", "run", "-c", str(config)], cwd=ROOT,
                              capture_output=True, text=True, timeout=limit_s)  # fmt: skip
        code, err = done.returncode, done.stderr
    except subprocess.TimeoutExpired as stopped:
        code, err = None, (stopped.stderr or b"").decode() if isinstance(stopped.stderr, bytes) else stopped.stderr
    seconds = round(time.monotonic() - started, 1)
    threads = next((line for line in (err or "").splitlines() if line.startswith("embedded model")), None)
    return {"exit_code": code, "stalled": code is None, "wall_s": seconds, "embedded_model": threads,
            **bar_figures(err or ""), "last_stderr": (err or "").strip().splitlines()[-3:]}  # fmt: skip


def bar_figures(stderr: str) -> dict:
    """The most time-outs and retries any progress bar showed (a stalled run has no call rows to count)."""
    found = {name: [int(n) for n in re.findall(rf"\b{name} (\d+)", stderr)] for name in ("timeouts", "retries")}
    return {f"bar_{name}": max(values, default=0) for name, values in found.items()}


def calls_of(run_dir: Path) -> dict:
    from factory.store import Store

    if not (run_dir / "factory.sqlite").exists():
        return {}
    with Store.open(run_dir, read_only=True) as store:
        calls, attempts, timeouts, slowest = store.query(
            "SELECT count(*), coalesce(sum(attempts), 0), count(*) FILTER (error_kind = 'timeout'), "
            "max(latency_s) FROM llm_calls"
        )[0]
    return {"calls": calls, "attempts": attempts, "resends": attempts - calls, "timed_out_calls": timeouts,
            "slowest_call_s": round(slowest or 0, 1)}  # fmt: skip


def stages_finished(run_dir: Path) -> list[str]:
    ledger = run_dir / "pipeline.json"
    return sorted(json.loads(ledger.read_text()).get("stages", {})) if ledger.exists() else []


def condition(args, name: str, burners: int, old: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"demo-{name}-") as scratch:
        work = Path(scratch)
        config = demo_config(args.config, work, old)
        load = burn(burners)
        try:
            outcome = run_demo(config, args.limit_s)
        finally:
            for process in load:
                process.kill()
                process.wait()
        stages = stages_finished(work / "run")
        figures = {"burners": burners, "old_settings": old, **outcome, "stages_finished": stages,
                   "finished": outcome["exit_code"] == 0, **calls_of(work / "run")}  # fmt: skip
    print(name, json.dumps(figures), flush=True)
    return figures


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(ROOT))
    results = {}
    if not args.skip_quiet:
        results["quiet"] = condition(args, "quiet", 0, False)
    results["burner"] = condition(args, "burner", args.burners, False)
    if args.old_settings:
        results["burner_old_settings"] = condition(args, "burner-old", args.burners, True)
    if "quiet" in results and results["quiet"]["finished"] and results["burner"]["finished"]:
        results["slowdown"] = round(results["burner"]["wall_s"] / results["quiet"]["wall_s"], 2)
    key = f"{args.config.name} | {os.cpu_count()} cores | {args.burners} burners"
    report(args.output, key, results)


if __name__ == "__main__":
    main()
