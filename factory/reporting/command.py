"""The `factory report` and `factory quality` subcommands; the CLI wires them in with `add_*_parser(subparsers)`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..refine.quality import format_quality, refine_quality
from .build import REPORT_FILENAME, write_report
from .snapshot import open_snapshot


def add_report_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    report = subparsers.add_parser("report", help="write a self-contained HTML report of a run (charts and tables)")
    report.add_argument("run_dir", help="the run folder")
    report.add_argument("--out", help=f"HTML file to write (default RUN_DIR/{REPORT_FILENAME})")
    report.set_defaults(func=cmd_report)
    return report


def cmd_report(args: argparse.Namespace) -> int:
    path = write_report(args.run_dir, args.out)
    print(f"report: {path}")
    return 0


def add_quality_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    quality = subparsers.add_parser("quality", help="quality figures of a run's verified refine trajectories")
    quality.add_argument("run_dir", help="the run folder")
    quality.add_argument("--json", action="store_true", help="machine-readable output")
    quality.set_defaults(func=cmd_quality)
    return quality


def run_quality(run_dir: str | Path) -> dict:
    """The quality figures of a run folder, read without writing to it (any schema version)."""
    with open_snapshot(run_dir) as store:
        return refine_quality(store)


def cmd_quality(args: argparse.Namespace) -> int:
    figures = run_quality(args.run_dir)
    print(json.dumps(figures, indent=2) if args.json else format_quality(figures))
    return 0
