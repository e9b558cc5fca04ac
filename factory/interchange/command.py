"""`factory import`: ATIF / ADP trajectories into a run store (wired in factory/cli.py)."""

from __future__ import annotations

import argparse


def add_import_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = commands.add_parser("import", help="ATIF or ADP trajectories into a run store (then filter and export)")
    parser.add_argument("path", help="a JSON lines file (one trajectory a line) or a JSON file of one or a list")
    parser.add_argument("--format", choices=["auto", "atif", "adp"], default="auto",
                        help="the file's format (default auto: a document with steps is ATIF, else ADP)")  # fmt: skip
    parser.add_argument("--run-dir", default="outputs/import", help="run folder (default outputs/import)")
    parser.set_defaults(func=cmd_import)
    return parser


def cmd_import(args: argparse.Namespace) -> int:
    from .load import import_file

    outcome = import_file(args.path, args.run_dir, args.format)
    print(f"imported {outcome.imported} trajectories into {args.run_dir}; {len(outcome.failed)} failed")
    for line in outcome.failed[:10]:
        print(f"  {line}")
    return 0 if outcome.imported or not outcome.failed else 1
