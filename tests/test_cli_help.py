"""`factory X --help` on every command exits 0 and explains every option it lists (issue 15)."""

import argparse
import importlib.util
import re

import pytest

from factory.cli import build_parser, main

COMMANDS = ("smoke", "ping", "refine", "coa", "coa-import", "import", "show", "calls", "run", "filter", "passrate", "pairs", "export",
            "publish", "report", "quality", "status", "eval", "train", "ls", "corpus", "tasks", "store")  # fmt: skip


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (group,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(group.choices)


def test_every_command_is_audited_and_listed_with_a_summary(capsys):
    assert set(subcommands()) == set(COMMANDS)  # a new command joins this audit
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    (group,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert all(choice.help for choice in group._choices_actions)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "train"])
def test_help_exits_0_and_every_option_it_lists_has_help_text(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: factory {command}")
    for action in subcommands()[command]._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:  # the old --run-dir
            continue
        name = action.option_strings[-1] if action.option_strings else action.metavar or action.dest
        assert action.help and action.help.strip(), f"factory {command}: {name} has no help text"
        assert name in out  # the option is listed, with its text
        assert " ".join(action.help.split()[:3]) in " ".join(out.split())


def train_help(capsys) -> str:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("factory train needs the train extra (torch)")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_train_help_exits_0_and_lists_its_overrides(capsys):
    out = train_help(capsys)
    assert "--config CONFIG  SFT config YAML" in out and "--optim.learning_rate (default 2e-05)" in out


def test_train_overrides_say_what_they_do(capsys):
    lines = [line.strip() for line in train_help(capsys).splitlines()]
    overrides = [line for line in lines if re.match(r"--[\w.]+ \((default|required)", line)]
    assert overrides and all(re.match(r"--[\w.]+ \(.*\): \w", line) for line in overrides)  # `--flag (default x): what`
