"""One grammar for the run folder, and model names checked before anything runs (issue 28).

Every command that takes a run folder takes it as its first word, RUN_DIR; where a -c config can name it
the folder is, first to last: RUN_DIR, the config's run_dir, outputs/<command>. The old `--run-dir DIR`
works for a release with a note on stderr. An unknown model name is one line before a store is opened.
"""

import argparse
import json
from pathlib import Path

import pytest

from factory.cli import build_parser, main
from factory.errors import ConfigError
from factory.run_config import config_from_args

DATA = Path(__file__).parent / "data"
# the commands that read or write a run folder, by their words after `factory`
RUN_FOLDER_COMMANDS = {
    "smoke", "ping", "refine", "coa", "coa-import", "import", "tasks expand", "tasks vary", "show", "calls", "run",
    "filter", "passrate", "pairs", "export", "publish", "report", "quality", "status", "eval", "ls", "store convert",
    "store check",
}  # fmt: skip
# a -c config can name their folder: RUN_DIR is optional
CONFIGURABLE = {"smoke", "ping", "refine", "coa", "tasks expand", "tasks vary", "run", "passrate", "pairs"}


def leaves(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return {" ".join(words): parser}
    return {k: v for name, sub in groups[0].choices.items() for k, v in leaves(sub, (*words, name)).items()}


def test_every_command_with_a_run_folder_shows_RUN_DIR_first_the_same_way():
    commands = leaves(build_parser())
    with_folder = {name for name, parser in commands.items() if any(a.metavar == "RUN_DIR" for a in parser._actions)}
    assert with_folder == RUN_FOLDER_COMMANDS  # a new command with a run folder joins this list
    for name in RUN_FOLDER_COMMANDS:
        parser = commands[name]
        first = next(a for a in parser._actions if not a.option_strings)
        assert first.metavar == "RUN_DIR" and first.help, name
        word = "[RUN_DIR]" if name in CONFIGURABLE else "RUN_DIR"
        assert parser.format_usage().startswith(f"usage: factory {name} {word} "), parser.format_usage()
        assert first.nargs == ("?" if name in CONFIGURABLE else None), name
        assert "--run-dir" not in parser.format_help()  # the old form is accepted, not taught


def args_of(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("command", sorted(CONFIGURABLE))
def test_the_run_folder_is_RUN_DIR_then_the_config_then_the_command_default(command, tmp_path):
    words = command.split()
    required = {"tasks expand": ["--out", "t.jsonl"], "tasks vary": ["--seeds", "s.jsonl", "--out", "t.jsonl"]}
    extra = required.get(command, [])
    default = config_from_args(args_of(*words, *extra)).run_dir
    helped = next(a for a in leaves(build_parser())[command]._actions if a.metavar == "RUN_DIR").help
    assert helped.endswith(f"else {default})")  # --help names the folder the command really uses
    config = tmp_path / "run.yaml"
    config.write_text(f"run_dir: {tmp_path / 'from-config'}\n")
    assert config_from_args(args_of(*words, "-c", str(config), *extra)).run_dir == tmp_path / "from-config"
    given = args_of(*words, str(tmp_path / "given"), "-c", str(config), *extra)
    assert config_from_args(given).run_dir == tmp_path / "given"


def test_the_old_run_dir_still_works_with_a_note(tmp_path, capsys):
    config = config_from_args(args_of("refine", "--run-dir", str(tmp_path / "old"), "--count", "2"))
    assert config.run_dir == tmp_path / "old"
    note = capsys.readouterr().err
    assert note == (
        "note: --run-dir is the old form (accepted for this release); write the run folder first: "
        "factory refine RUN_DIR ...\n"
    )
    same = config_from_args(args_of("refine", str(tmp_path / "old"), "--run-dir", str(tmp_path / "old")))
    assert same.run_dir == tmp_path / "old"


def test_two_different_run_folders_are_one_line_and_nothing_is_made(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["refine", str(a), "--run-dir", str(b), "--count", "1"]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"error: two run folders given: {a} and --run-dir {b}; give it once, first: factory refine RUN_DIR ...\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_import_takes_RUN_DIR_then_FILE_and_the_old_forms_for_a_release(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    atif = tmp_path / "t.atif.jsonl"
    atif.write_text(json.dumps(json.loads((DATA / "interchange" / "harbor_atif.json").read_text())) + "\n")
    assert main(["import", "new", str(atif)]) == 0
    assert capsys.readouterr().err == "" and (tmp_path / "new" / "factory.sqlite").is_file()
    assert main(["import", str(atif), "--run-dir", "old"]) == 0
    assert "note: --run-dir is the old form" in capsys.readouterr().err and (tmp_path / "old").is_dir()
    assert main(["import", str(atif)]) == 0  # the old default folder
    err = capsys.readouterr().err
    assert "note: the run folder now comes first: factory import RUN_DIR FILE; importing into outputs/import" in err
    assert (tmp_path / "outputs" / "import" / "factory.sqlite").is_file()


ACCEPTED = "use 'local' (the embedded model), 'local:/path.gguf', a litellm model string such as openai/gpt-4o-mini"


@pytest.mark.parametrize(
    "argv, source",
    [
        (["refine", "RUN", "--model", "locl"], "--model"),
        (["refine", "RUN", "--model", "locl", "--dry-run"], "--model"),
        (["passrate", "RUN", "--tasks", "tasks.jsonl", "--model", "locl"], "--model"),
        (["run", "-c", "CONFIG", "--model", "locl"], "--model"),
        (["run", "-c", "TYPO"], "TYPO: field 'llm.model'"),
        (["run", "-c", "POLICY"], "POLICY: field 'pipeline.passrate.policy.model'"),
    ],
)
def test_an_unknown_model_fails_at_once_naming_what_is_accepted(argv, source, tmp_path, capsys):
    run = tmp_path / "run"
    configs = {
        "CONFIG": f"run_dir: {run}\n",
        "TYPO": f"run_dir: {run}\nllm: {{model: locl}}\n",
        "POLICY": f"run_dir: {run}\npipeline: {{passrate: {{policy: {{model: locl}}}}}}\n",
    }
    for name, text in configs.items():
        (tmp_path / f"{name}.yaml").write_text(text)
    paths = {"RUN": str(run), **{name: str(tmp_path / f"{name}.yaml") for name in configs}}
    assert main([paths.get(word, word) for word in argv]) == 2
    err = capsys.readouterr().err
    source = source.replace("TYPO", paths["TYPO"]).replace("POLICY", paths["POLICY"])
    assert err.startswith(f"error: {source}: unknown model 'locl': {ACCEPTED}") and err.count("\n") == 1
    assert "base_url (--base-url)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{name}.yaml" for name in configs)  # no run folder


@pytest.mark.parametrize(
    "flags",
    [["--model", "local"], ["--model", "local:/models/x.gguf"], ["--model", "qwen", "--base-url", "http://h:8/v1"],
     ["--model", "openai/gpt-4o-mini"], ["--model", "anthropic/claude-haiku-4-5"], ["--model", "ollama/llama3"]],
)  # fmt: skip
def test_accepted_model_names_pass_the_check_without_their_keys(flags, tmp_path, monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)  # the key is asked for when a request is sent, not here
    assert config_from_args(args_of("refine", str(tmp_path / "run"), *flags)).llm.model == flags[1]


@pytest.mark.parametrize(
    "argv, named",
    [
        (["ping", "--model", "m", "--base-url", "ftp://h/v1"], "command line: field 'llm.base_url' (--base-url): "),
        (["refine", "--count", "0"], "command line: field 'refine.count' (--count): "),
        (["coa", "--max-steps", "0"], "command line: field 'coa.max_steps' (--max-steps): "),
        (["smoke", "-n", "0"], "command line: field 'smoke.n' (-n): "),
        (["passrate", "-n", "0", "--tasks", "t.jsonl"], "command line: field 'n' (-n): "),
    ],
)
def test_a_bad_flag_value_names_the_flag_beside_the_config_key(argv, named, tmp_path, capsys):
    assert main([*argv[:1], str(tmp_path / "run"), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {named}") and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_a_bad_value_from_the_config_file_names_no_flag(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("refine: {count: 0}\n")
    with pytest.raises(ConfigError, match=r"run.yaml: field 'refine.count': Input should be") as info:
        config_from_args(args_of("refine", "-c", str(config)))
    assert "(--count)" not in str(info.value)


@pytest.mark.parametrize(
    "argv, field, value",
    [
        (["refine", "--no-code"], "refine.with_code", False),
        (["refine", "--no-injection"], "refine.injection", False),
        (["refine", "--dm", "world"], "refine.dm_evaluation", "world"),
        (["refine", "--persona-field", "bio"], "refine.persona_field", "bio"),
        (["coa", "--variant", "code"], "coa.variant", "code"),
        (["coa", "--corpus", "pages.jsonl"], "coa.tools.web_search.local.path", Path("pages.jsonl")),
        (["smoke", "-n", "7"], "smoke.n", 7),
    ],
)
def test_each_command_s_own_flags_set_the_fields_it_declares(argv, field, value, tmp_path):
    """The commands declare beside their flags which run-config fields they set (cli_options.sets_config)."""
    config = config_from_args(args_of(argv[0], str(tmp_path / "run"), *argv[1:]))
    found = config
    for part in field.split("."):
        found = getattr(found, part)
    assert found == value
    assert config_from_args(args_of(argv[0], str(tmp_path / "run"))) != config  # the default differs
