"""What one sandboxed run costs: wall time of run_program / run_function on tiny code.

    python benchmarks/sandbox_overhead.py            # 20 runs of each, after one warm-up
    python benchmarks/sandbox_overhead.py --runs 50

Prints the median and p90 wall time per run for a program (`print(1)`), a function
with 10 calls, and a numpy import, beside a bare `python -c pass` start in the same
process as the baseline, and writes benchmarks/results/sandbox_overhead.json
(with the verdict's isolation, so a figure says which layers it paid for).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factory.sandbox import SandboxLimits, run_function, run_program  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "sandbox_overhead.json"
LIMITS = SandboxLimits(cpu_s=5, wall_s=20)


def timed(action, runs: int) -> dict:
    action()  # warm-up: page cache, capability probes
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1] * 1000, 1),
    }


def checked(verdict):
    assert verdict.status == "ok", verdict
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    last = checked(run_program("print(1)", limits=LIMITS))
    figures = {
        "python_start_baseline": timed(lambda: subprocess.run([sys.executable, "-s", "-S", "-c", "pass"]), runs),
        "run_program_print": timed(lambda: checked(run_program("print(1)", limits=LIMITS)), runs),
        "run_function_10_calls": timed(
            lambda: checked(run_function("def f(x):\n    return x * 2\n", "f", [[i] for i in range(10)], LIMITS)), runs
        ),
        "run_program_numpy": timed(
            lambda: checked(run_program("import numpy\nprint(numpy.arange(3).sum())", limits=LIMITS)), runs
        ),
    }
    for name, figure in figures.items():
        print(f"{name:24s} median {figure['median_ms']:8.1f} ms   p90 {figure['p90_ms']:8.1f} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": runs, "machine": platform.machine(), "figures": figures,
                                   "isolation": last.isolation}, indent=1) + "\n")  # fmt: skip
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
