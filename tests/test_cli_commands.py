"""factory/cli_commands.py writes each command's help line so `factory --help` imports no command module;
the command modules build the real parsers. These tests keep the two saying the same thing."""

from __future__ import annotations

import argparse
import subprocess
import sys

from factory.cli import build_parser
from factory.cli_commands import COMMANDS


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [(choice.dest, choice.help) for choice in group._choices_actions]


def test_the_table_lists_what_the_command_modules_build_in_help_order():
    built = subcommands(build_parser())
    listed = [(entry.name, entry.help) for entry in COMMANDS]
    assert built[:-1] == listed  # the last is `train`, listed by cli.py itself
    assert built[-1][0] == "train"


def test_the_help_page_is_the_same_with_or_without_the_command_modules():
    assert build_parser(["--help"]).format_help() == build_parser().format_help()


def test_a_command_gets_its_own_parser_and_only_its_module_is_imported():
    probe = (
        "import sys; from factory.cli import build_parser; "
        "args = build_parser(['ls', 'run']).parse_args(['ls', 'run']); "
        "print(args.func.__module__, 'factory.export.command' in sys.modules, 'factory.evaluate' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["factory.viewer.command", "False", "False"]
