"""Shared by the yield benchmarks: ratios that tolerate zero, and one results file per benchmark
whose entries are keyed by model and settings, so runs on several models sit side by side."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path


def per(total: float, n: int) -> float | None:
    return round(total / n, 2) if n else None


def save(output: Path, key: str, figures: dict) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    report = json.loads(output.read_text()) if output.exists() else {}
    report[key] = {**figures, "machine": f"{platform.machine()} {platform.system()}", "date": time.strftime("%Y-%m-%d")}
    output.write_text(json.dumps(report, indent=2) + "\n")
