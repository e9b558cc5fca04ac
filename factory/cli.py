"""`factory` command line, the front door: one parser built from each package's commands, and dispatch.

Each package owns its `command.py` (an `add_*_parser` and its `cmd_*` functions); the
options and overrides they share are in factory/cli_options.py. A generating command
(`takes_run_config`) gets its FactoryConfig from here: the -c file with its flags on top.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from train.evaluate.command import add_eval_parser

from .cli_options import run_folder_first_usage
from .coa.command import add_coa_parsers
from .coa.pairs.command import add_pairs_parser
from .errors import FactoryError, require_train_extra
from .export.command import add_export_parser, add_publish_parser
from .filters.command import add_filter_parser
from .interchange.command import add_import_parser
from .passrate.command import add_passrate_parser
from .pipeline.command import add_run_parser
from .refine.command import add_refine_parser
from .reporting.command import add_quality_parser, add_report_parser
from .reporting.status_command import add_calls_parser, add_status_parser
from .run_config import config_from_args
from .smoke.command import add_smoke_parsers
from .synth.command import add_synth_parsers
from .version import __version__
from .viewer.command import add_ls_parser, add_show_parser

# In --help order. Curation, publishing, training and evaluation follow the generating commands.
COMMAND_PARSERS = (
    add_smoke_parsers,
    add_refine_parser,
    add_coa_parsers,
    add_import_parser,
    add_synth_parsers,
    add_show_parser,
    add_calls_parser,
    add_run_parser,
    add_filter_parser,
    add_passrate_parser,
    add_pairs_parser,
    add_export_parser,
    add_publish_parser,
    add_report_parser,
    add_quality_parser,
    add_status_parser,
    add_eval_parser,
    add_ls_parser,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="factory", description="Synthetic agent-trajectory data factory.")
    parser.add_argument("--version", action="version", version=f"factory {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for add_parser in COMMAND_PARSERS:
        add_parser(commands)
    for command in commands.choices.values():  # RUN_DIR first in every usage line, as the README writes it
        run_folder_first_usage(command)
    # Listed for --help only: main() hands `factory train ...` to train.sft before argparse sees it.
    commands.add_parser("train", help="masked SFT on an exported dataset (python -m train.sft --help)")
    return parser


def run_trainer(argv: list[str]) -> int:
    require_train_extra("factory train")
    from train.sft import main as train_main

    return train_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        try:
            return _dispatch(argv)
        finally:  # also after argparse's SystemExit (--help): a closed pipe shows here, not at the interpreter's exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_went_away()


def _dispatch(argv: list[str]) -> int:
    try:
        if argv[:1] == ["train"]:  # the trainer parses its own `--section.field value` overrides
            return run_trainer(argv[1:])
        args = build_parser().parse_args(argv)
        if getattr(args, "dry_run", False):  # what it would send, instead of sending it (issue 17)
            from .estimate.command import dry_run

            return dry_run(args, config_from_args(args))
        if getattr(args, "takes_run_config", False):  # a generating command: the -c file with its flags on top
            return args.func(args, config_from_args(args))
        return args.func(args)
    except FactoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: completed calls are saved; run the same command again to finish", file=sys.stderr)
        return 130


def _reader_went_away() -> int:
    """`factory ... | head`: the reader closed the pipe. Stop quietly, as cat and grep do (exit 128 + SIGPIPE)."""
    # Whatever is still buffered for stdout cannot be written; point stdout at /dev/null so
    # the interpreter's final flush does not print a second BrokenPipeError on the way out.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
