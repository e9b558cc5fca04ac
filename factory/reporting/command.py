"""The `factory report` and `factory quality` subcommands; the CLI wires them in with `add_*_parser(subparsers)`."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import duckdb

from ..export.options import export_options
from ..refine.quality import format_quality, refine_quality
from ..refine.quality_rows import format_row_quality, row_quality
from ..store import STORE_FILENAME, Store
from ..store.errors import classify
from .build import REPORT_FILENAME, write_report
from .coa_quality import coa_quality, format_coa_quality
from .data_samples import SEED


def add_report_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    report = subparsers.add_parser("report", help="write a self-contained HTML report of a run (charts and tables)")
    report.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    report.add_argument("--out", help=f"HTML file to write (default RUN_DIR/{REPORT_FILENAME})")
    report.add_argument(
        "--validation",
        type=float,
        help="as `factory export --validation`, so the report's split counts are the export's (default 0.05)",
    )
    report.add_argument("--upsample", choices=["none", "repeat"], help="as `factory export --upsample` (default none)")
    report.add_argument("--seed", default=SEED, help=f"which sample trajectories are shown (default {SEED!r})")
    report.set_defaults(func=cmd_report)
    return report


def cmd_report(args: argparse.Namespace) -> int:
    store_path = Path(args.run_dir) / STORE_FILENAME
    try:
        Store.open(args.run_dir, read_only=True).close()  # a damaged store says so in its own words
        options = export_options(formats="all", validation=args.validation, upsample=args.upsample)
        path = write_report(args.run_dir, args.out, options, args.seed)
    except (duckdb.Error, sqlite3.Error) as exc:  # met in the report's queries
        raise classify(store_path, exc, "read") from None
    print(f"report: {path}")
    return 0


def add_quality_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    quality = subparsers.add_parser("quality", help="quality figures of a run's verified trajectories (both paths)")
    quality.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    quality.add_argument("--json", action="store_true", help="machine-readable output")
    quality.set_defaults(func=cmd_quality)
    return quality


def cmd_quality(args: argparse.Namespace) -> int:
    with Store.open(args.run_dir, read_only=True) as store:  # read-only: a run being written is not touched
        refine, rows, coa = refine_quality(store), row_quality(store), coa_quality(store)
    # JSON: refine's figures at the top (as before), its within-row ones under "within_rows", coa/import under "coa".
    text = "\n".join(
        part for part in (format_quality(refine), format_row_quality(rows), format_coa_quality(coa)) if part
    )
    print(json.dumps({**refine, "within_rows": rows, "coa": coa}, indent=2) if args.json else text)
    return 0
