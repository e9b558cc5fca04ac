"""Shared by the yield benchmarks: ratios that tolerate zero, and one results file per benchmark
whose entries are keyed by model and settings, so runs on several models sit side by side."""

from __future__ import annotations

import json
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from factory.store import Store


def per(total: float, n: int) -> float | None:
    return round(total / n, 2) if n else None


def save(output: Path, key: str, figures: dict) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    report = json.loads(output.read_text()) if output.exists() else {}
    report[key] = {**figures, "machine": f"{platform.machine()} {platform.system()}", "date": time.strftime("%Y-%m-%d")}
    output.write_text(json.dumps(report, indent=2) + "\n")


def timed_run(
    kept_dir: str | None, prefix: str, run: Callable[[str], Any], measure: Callable[[Store, Any, float], dict]
) -> dict:
    """Run a path into `kept_dir` (or a temporary folder, removed after), then measure its store."""
    run_dir = kept_dir or tempfile.mkdtemp(prefix=prefix)
    started = time.perf_counter()
    outcome = run(run_dir)
    seconds = time.perf_counter() - started
    with Store.open(run_dir, read_only=True) as store:
        figures = measure(store, outcome, seconds)
    if not kept_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
    return figures


def report(output: Path, key: str, figures: dict) -> None:
    print(json.dumps({key: figures}, indent=2))
    save(output, key, figures)
