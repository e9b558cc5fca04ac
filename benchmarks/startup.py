"""How long `factory` takes to start, and which heavy libraries each entry point drags in.

    python benchmarks/startup.py                    # 10 rounds, saved under the key "current"
    python benchmarks/startup.py --runs 20 --label after-lazy-imports
    git archive HEAD | tar -x -C /tmp/head    # an older tree, timed in the same rounds (fair under load):
    python benchmarks/startup.py --before /tmp/head --label after

Every CLI call, every test file and every subprocess the factory starts pays the import
time of `factory` before it does any work, so the goal is a start that costs little more
than the interpreter: `factory --help` and `factory --version` within 0.5 s, and
`import factory.config` without the LLM client, DuckDB, pyarrow, torch or the Hub client.

Each round starts every probe once, in a fresh process, one after another (so a change in
the machine's load hits all of them alike); a bare `python -c pass` in the same rounds is
the baseline. With --before TREE, the same probes run in the same rounds against another checkout
(its factory/ first on PYTHONPATH), so a before and an after share the machine's load. The figures
are the median and min wall time over the rounds. One more run of
each probe reports which heavy modules ended up in its sys.modules (written at exit, so
--help's SystemExit still reports). Writes benchmarks/results/startup.json, one entry per
--label, so a before and an after sit side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "startup.json"
GOAL_S = 0.5
HEAVY = (
    "torch", "transformers", "duckdb", "pyarrow", "aiohttp", "huggingface_hub", "datasets", "litellm",
    "openai", "numpy", "pandas", "pydantic", "httpx", "tqdm", "yaml", "jinja2", "tiktoken", "trl", "ray",
)  # fmt: skip

# Written into the child before the probe runs: at exit it lists the heavy top-level packages loaded.
REPORT_HEAVY = f"""
import atexit, json, os, sys
def _report():
    loaded = sorted(name for name in {HEAVY!r} if name in sys.modules)
    with open(os.environ["STARTUP_HEAVY_OUT"], "w") as out:
        json.dump(loaded, out)
atexit.register(_report)
"""


def factory_script() -> str:
    """The installed console script, as a user runs it (falls back to the module)."""
    beside_python = Path(sys.executable).parent / "factory"
    return str(beside_python) if beside_python.exists() else shutil.which("factory") or ""


def probes() -> dict[str, tuple[list[str], str]]:
    """name -> (command line to time, the same work as Python source for the heavy-module report)."""
    python, script = sys.executable, factory_script()
    cli = "import sys; sys.argv = ['factory', {flag!r}]; from factory.cli import main; sys.exit(main())"
    return {
        "python_start_baseline": ([python, "-c", "pass"], "pass"),
        "factory_help": ([script, "--help"], cli.format(flag="--help")),
        "factory_version": ([script, "--version"], cli.format(flag="--version")),
        "import_factory_config": ([python, "-c", "import factory.config"], "import factory.config"),
        "import_factory": ([python, "-c", "import factory"], "import factory"),
    }


def run_quietly(command: list[str], tree: Path, env: dict | None = None) -> float:
    env = {**(env or os.environ), "PYTHONPATH": str(tree)}  # `python -c` and the script both import tree's factory
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return seconds


def time_rounds(commands: dict[tuple[str, str], list[str]], trees: dict[str, Path], runs: int) -> dict:
    for (tree, _), command in commands.items():  # warm-up: page cache and .pyc files
        run_quietly(command, trees[tree])
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in commands}
    for _ in range(runs):
        for (tree, name), command in commands.items():
            samples[tree, name].append(run_quietly(command, trees[tree]))
    return samples


def heavy_modules(source: str, tree: Path) -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "heavy.json"
        env = {**os.environ, "STARTUP_HEAVY_OUT": str(out)}
        run_quietly([sys.executable, "-c", REPORT_HEAVY + source], tree, env)
        return json.loads(out.read_text())


def measure(runs: int, trees: dict[str, Path]) -> dict[str, dict[str, dict]]:
    """tree label -> probe -> figures."""
    table = probes()
    commands = {(tree, name): command for tree in trees for name, (command, _) in table.items()}
    samples = time_rounds(commands, trees, runs)
    return {
        tree: {
            name: {
                "median_s": round(statistics.median(samples[tree, name]), 3),
                "min_s": round(min(samples[tree, name]), 3),
                "heavy_modules": heavy_modules(source, trees[tree]),
            }
            for name, (_, source) in table.items()
        }
        for tree in trees
    }


def print_table(tree: str, figures: dict[str, dict]) -> None:
    print(f"\n{tree}:")
    print(f"{'probe':<24}{'median s':>10}{'min s':>8}  heavy modules loaded")
    for name, row in figures.items():
        heavy = ", ".join(row["heavy_modules"]) or "-"
        print(f"{name:<24}{row['median_s']:>10.3f}{row['min_s']:>8.3f}  {heavy}")
    for name in ("factory_help", "factory_version"):
        verdict = "meets" if figures[name]["median_s"] <= GOAL_S else "misses"
        print(f"{name}: {verdict} the {GOAL_S} s goal (median {figures[name]['median_s']} s)")


def save(label: str, runs: int, figures: dict[str, dict], before: dict | None) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    report[label] = {
        "runs": runs,
        "goal_s": GOAL_S,
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d"),
        "figures": figures,
        **({"before_same_rounds": before} if before else {}),
    }
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="fresh processes per probe (default 10)")
    parser.add_argument("--label", default="current", help="the key this run is saved under in startup.json")
    parser.add_argument("--before", type=Path, help="another checkout of the project, timed in the same rounds")
    args = parser.parse_args()
    if not factory_script():
        raise SystemExit("no `factory` console script: pip install -e . in this environment first")
    trees = {"this tree": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    figures = measure(args.runs, trees)
    for tree, rows in figures.items():
        print_table(tree, rows)
    save(args.label, args.runs, figures["this tree"], figures.get("before"))


if __name__ == "__main__":
    main()
