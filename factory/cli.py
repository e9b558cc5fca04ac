"""`factory` command line, the front door: one parser built from each package's commands, and dispatch.

Each package owns its `command.py` (an `add_*_parser` and its `cmd_*` functions); the
options and overrides they share are in factory/cli_options.py. A call imports only the
command module it names (factory/cli_commands.py lists the rest by help line), so
`factory --help` and `--version` start without the LLM client, DuckDB or pyarrow. A generating command
(`takes_run_config`) gets its FactoryConfig from here: the -c file with its flags on top.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from .cli_commands import COMMANDS
from .cli_options import run_folder_first_usage
from .errors import FactoryError
from .version import __version__


def build_parser(for_argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; for `for_argv`, only the parser of the command it names is built (its module
    imported) and the others are listed by name and help line, all `factory --help` shows of them."""
    parser = argparse.ArgumentParser(prog="factory", description="Synthetic agent-trajectory data factory.")
    parser.add_argument("--version", action="version", version=f"factory {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    named = None if for_argv is None else _command_named(for_argv)
    built = {entry.adder for entry in COMMANDS if for_argv is None or entry.name == named}
    for entry in COMMANDS:
        if entry.adder in built:
            built.discard(entry.adder)  # an adder may build several commands (smoke and ping): call it once
            getattr(importlib.import_module(entry.module), entry.adder)(commands)
        elif entry.name not in commands.choices:
            commands.add_parser(entry.name, help=entry.help)
    for subparser in commands.choices.values():  # RUN_DIR first in every usage line, as the README writes it
        run_folder_first_usage(subparser)
    # Listed for --help only: main() hands `factory train ...` to train.sft before argparse sees it.
    commands.add_parser("train", help="masked SFT on an exported dataset (python -m train.sft --help)")
    return parser


def run_trainer(argv: list[str]) -> int:
    from .plugins import trainer

    return trainer("factory train").main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    previous = _stop_on_sigterm()
    try:
        try:
            return _dispatch(argv)
        finally:  # also after argparse's SystemExit (--help): a closed pipe shows here, not at the interpreter's exit
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_went_away()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Terminated:
    """Whether SIGTERM stopped this call (its exit status is then 143, not Ctrl-C's 130)."""

    seen = False


def _stop_on_sigterm():
    """SIGTERM (a scheduler's `kill`: Slurm, Kubernetes, systemd) stops a run as Ctrl-C does: the run is marked
    interrupted and its answers are saved. The handler hands the signal to whatever handles SIGINT now
    (asyncio's, which cancels the batch's main task, or Python's KeyboardInterrupt); the previous handler
    is returned to restore, or None where none can be set (not the main thread)."""

    def terminate(signum, frame):
        _Terminated.seen = True
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # SIGINT may be ignored (a background job): SIGTERM must still stop
            return handler(signal.SIGINT, frame)
        raise KeyboardInterrupt

    _Terminated.seen = False
    try:
        return signal.signal(signal.SIGTERM, terminate)
    except ValueError:
        return None


def _dispatch(argv: list[str]) -> int:
    try:
        if argv[:1] == ["train"]:  # the trainer parses its own `--section.field value` overrides
            return run_trainer(argv[1:])
        args = build_parser(argv).parse_args(argv)
        from .run_config import config_from_args  # pydantic models of every stage: not for --help

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
        return 128 + (signal.SIGTERM if _Terminated.seen else signal.SIGINT)


def _command_named(argv: list[str]) -> str | None:
    """The command word of `argv` (the top-level parser has only flags before it), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


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
