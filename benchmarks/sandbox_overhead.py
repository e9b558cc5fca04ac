"""What one sandboxed run costs: wall time of run_program / run_function on tiny code.

    python benchmarks/sandbox_overhead.py            # 20 runs of each, after one warm-up
    python benchmarks/sandbox_overhead.py --runs 50

Prints the median and p90 wall time per run for a program (`print(1)`), a function
with 10 calls, and a numpy import, beside a bare `python -s -S -c pass` start in the
same process as the baseline, taken in turn with them so that a busy spell of the machine
falls on all alike (each figure's ratio to it: issue 31's goal is 1.5x for print(1)), and
the throughput at concurrency 8 of print(1) checks beside bare starts in three alternating
pairs (checks/s and the median ratio; the goal: at least the bare rate). Writes benchmarks/results/sandbox_overhead.json
(with the verdict's isolation, so a figure says which layers it paid for).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factory.sandbox import SandboxLimits, arun_program, run_function, run_program  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "sandbox_overhead.json"
LIMITS = SandboxLimits(cpu_s=5, wall_s=20)


def timed_in_turn(actions: dict, runs: int) -> dict:
    """Each action `runs` times, taken in turn (the bare start, then each check, then round again), so a busy
    spell of the machine falls on the baseline and the checks alike: their ratios are what is compared."""
    for action in actions.values():
        action()  # warm-up: page cache, capability probes, the fork server
    samples = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            started = time.perf_counter()
            action()
            samples[name].append(time.perf_counter() - started)
    return {name: summary(values) for name, values in samples.items()}


def summary(samples: list[float]) -> dict:
    samples = sorted(samples)
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1] * 1000, 1),
    }


async def per_second(start_one, total: int, concurrency: int) -> float:
    """How many of `total` runs finish per second with `concurrency` in flight at once."""
    slots = asyncio.Semaphore(concurrency)

    async def one():
        async with slots:
            await start_one()

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return round(total / (time.perf_counter() - started), 1)


async def bare_start() -> None:
    process = await asyncio.create_subprocess_exec(sys.executable, "-s", "-S", "-c", "pass")
    await process.wait()


async def sandboxed_print() -> None:
    checked(await arun_program("print(1)", limits=LIMITS))


def throughput(runs: int, concurrency: int = 8, rounds: int = 3) -> dict:
    """Checks per second beside bare starts per second, in `rounds` alternating pairs; the median ratio."""
    total = max(runs * 2 // rounds, concurrency * 4)
    bare, sandboxed = [], []
    for _ in range(rounds):
        bare.append(asyncio.run(per_second(bare_start, total, concurrency)))
        sandboxed.append(asyncio.run(per_second(sandboxed_print, total, concurrency)))
    ratios = [round(ours / theirs, 2) for ours, theirs in zip(sandboxed, bare)]
    return {"concurrency": concurrency, "runs_per_round": total, "rounds": rounds,
            "bare_python_per_s": statistics.median(bare), "run_program_print_per_s": statistics.median(sandboxed),
            "ratio_to_bare": statistics.median(ratios), "ratios": ratios}  # fmt: skip


def checked(verdict):
    assert verdict.status == "ok", verdict
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    last = checked(run_program("print(1)", limits=LIMITS))
    figures = timed_in_turn({
        "python_start_baseline": lambda: subprocess.run([sys.executable, "-s", "-S", "-c", "pass"]),
        "run_program_print": lambda: checked(run_program("print(1)", limits=LIMITS)),
        "run_function_10_calls": lambda: checked(
            run_function("def f(x):\n    return x * 2\n", "f", [[i] for i in range(10)], LIMITS)
        ),
        "run_program_numpy": lambda: checked(run_program("import numpy\nprint(numpy.arange(3).sum())", limits=LIMITS)),
    }, runs)  # fmt: skip
    base = figures["python_start_baseline"]["median_ms"]
    for name, figure in figures.items():
        figure["ratio_to_python_start"] = round(figure["median_ms"] / base, 2)
        print(f"{name:24s} median {figure['median_ms']:8.1f} ms   p90 {figure['p90_ms']:8.1f} ms"
              f"   {figure['ratio_to_python_start']:5.2f}x bare python")  # fmt: skip
    rate = throughput(runs)
    print(
        f"concurrency {rate['concurrency']}: {rate['run_program_print_per_s']} print(1) checks/s beside "
        f"{rate['bare_python_per_s']} bare starts/s ({rate['ratio_to_bare']}x, the median of {rate['ratios']})"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": runs, "machine": platform.machine(), "figures": figures,
                                   "throughput": rate, "isolation": last.isolation}, indent=1) + "\n")  # fmt: skip
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
