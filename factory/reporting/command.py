"""The `factory report` subcommand; the CLI wires it in with `add_report_parser(subparsers)`."""

from __future__ import annotations

import argparse

from .build import REPORT_FILENAME, write_report


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
