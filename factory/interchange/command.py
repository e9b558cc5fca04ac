"""`factory import`: ATIF / ADP trajectories into a run store (wired in factory/cli.py)."""

from __future__ import annotations

import argparse

from ..cli_options import add_run_folder, run_folder_and_file


def add_import_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "import",
        help="ATIF or ADP trajectories into a run store (then filter and export)",
        usage="%(prog)s RUN_DIR FILE [options]",
    )
    add_run_folder(
        parser, "the run folder to import into (made if missing)", required=True, usage="factory import RUN_DIR FILE"
    )
    parser.add_argument("path", metavar="FILE", nargs="?",  # one word alone: the old `import FILE`, for a release
                        help="a JSON lines file (one trajectory a line) or a JSON file of one or a list")  # fmt: skip
    parser.add_argument("--format", choices=["auto", "atif", "adp"], default="auto",
                        help="the file's format (default auto: a document with steps is ATIF, else ADP)")  # fmt: skip
    parser.set_defaults(func=cmd_import)
    return parser


def cmd_import(args: argparse.Namespace) -> int:
    from .load import import_file

    run_dir, path = run_folder_and_file(args, "outputs/import")
    outcome = import_file(path, run_dir, args.format)
    print(f"imported {outcome.imported} trajectories into {run_dir}; {len(outcome.failed)} failed")
    for line in outcome.failed[:10]:
        print(f"  {line}")
    return 0 if outcome.imported or not outcome.failed else 1
