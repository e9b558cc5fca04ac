"""The README's commands work as written (issue 28).

Every `factory ...` command in a fenced shell block of README.md or docs/*.md parses with the CLI's own
parser (a grammar change cannot leave an example that fails with `unrecognized arguments`), and every
README command that runs offline in seconds is run as written, in README order, through the CLI's main() in a
scratch folder holding what the lines before it would have left there (the demo's run folder, a smoke
run, the input files they name). The others are in SKIPPED, each with the reason it is not run; a
README command in neither place fails this test, so a new example is either run or says why not.
"""

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from loopback_server import LoopbackServer
from refine_replay import ReplayServer, load_replay_set, write_personas
from test_coa_import import TAGGED_LOG

from factory.cli import build_parser, main
from factory.cli_options import parse_overrides

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console"}
COMMAND_WORDS = {"factory", "pip", "python", "python3", "ray"}

SKIPPED = {  # the start of a README command -> why this test does not run it
    "python3 -m venv .venv": "the README's two main commands: install packages, then run the demo or the suite",
    "factory run -c my.yaml": "needs the reader's my.yaml and an API key",
    "factory refine outputs/refine --count 20": "needs a served model (HOSTED_VLLM_API_BASE)",
    "factory coa outputs/coa --tasks ../shared": "needs an API key (OPENAI_API_KEY) and ../shared",
    "factory train": "trains a model (torch; minutes on a CPU)",
    "factory eval outputs/demo --model outputs/train_tiny": "plays the checkpoint `factory train` writes",
}


def shell_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each command in the file's fenced shell blocks, continuations joined, `$ ` off."""
    found, fence, joined = [], None, False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        opened = re.match(r"\s*```(\S*)", line)
        if opened:
            fence, joined = (opened.group(1) if fence is None else None), False
            continue
        text = line.strip().removeprefix("$ ")
        if fence not in SHELL_BLOCKS:
            continue
        if joined:
            found[-1] = (found[-1][0], found[-1][1][:-1].rstrip() + " " + text)
        elif text.split(" ", 1)[0] in COMMAND_WORDS:
            found.append((number, text))
        else:
            continue  # a listing, or a synopsis's second line
        joined = found[-1][1].endswith("\\")
    return found


def factory_parts(line: str) -> list[str]:
    """The `factory ...` commands of a line (`a && factory b`: `factory b`)."""
    return [part.strip() for part in re.split(r"&&|;", line) if part.strip().startswith("factory ")]


def skip_reason(line: str) -> str | None:
    starts = [start for start in SKIPPED if line.startswith(start)]
    return SKIPPED[max(starts, key=len)] if starts else None


DOCUMENTED = [(f"{p.name}:{n}", c) for p in DOCS for n, line in shell_lines(p) for c in factory_parts(line)]
README_LINES = [(f"README.md:{n}", line) for n, line in shell_lines(README)]
RUN = [(where, line) for where, line in README_LINES if skip_reason(line) is None]


def subparser(words: list[str]):
    parser = build_parser()
    for word in words:
        groups = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not groups or word not in groups[0].choices:
            return parser
        parser = groups[0].choices[word]
    return parser


def synopsis_skeleton(command: str) -> tuple[str, list[str]]:
    """`factory export RUN_DIR --out DIR [--jsonl]` -> (`factory export RUN_DIR --out DIR`, ['--jsonl']): the
    synopsis without its optional parts, first alternative of `(a | b)`, and the flags the parts named."""
    flags = re.findall(r"(?<![\w-])--[\w][\w-]*", command)
    while re.search(r"\[[^\[\]]*\]", command):
        command = re.sub(r"\[[^\[\]]*\]", "", command)
    command = re.sub(r"\(([^()|]*)\|[^()]*\)", r"\1", command)
    return command, flags


@pytest.mark.parametrize("where, command", DOCUMENTED, ids=[w for w, _ in DOCUMENTED])
def test_every_documented_factory_command_parses(where, command, capsys):
    synopsis = bool(re.search(r"\[|\(|\.\.\.", command.split("#")[0]))
    command, flags = synopsis_skeleton(command) if synopsis else (command, [])
    words = shlex.split(command, comments=True)
    assert "--run-dir" not in words, f"{where}: write the run folder first, not --run-dir"
    if words[1] == "train":  # factory train hands its words to train.sft: --config and --section.field values
        assert "--config" in words, f"{where}: {command}"
        rest = words[1:]
        del rest[rest.index("--config") : rest.index("--config") + 2]
        parse_overrides(rest[1:])
        return
    known = {s for a in subparser(words[1:3])._actions for s in a.option_strings}
    assert set(flags) <= known, f"{where}: unknown flags {sorted(set(flags) - known)} in {command}"
    try:
        build_parser().parse_args(words[1:])
    except SystemExit as exc:
        pytest.fail(f"{where}: `{command}` does not parse: {capsys.readouterr().err.strip()} (exit {exc.code})")


def test_every_readme_command_is_run_or_says_why_not():
    assert len(RUN) >= 10 and DOCUMENTED
    stale = [start for start in SKIPPED if not any(line.startswith(start) for _, line in README_LINES)]
    assert not stale, f"SKIPPED names commands the README no longer has: {stale}"
    for where, line in RUN:
        assert len(factory_parts(line)) == 1 and line.startswith("factory "), f"{where}: run one factory command"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """What the README's earlier lines leave: the demo's run folder (3 personas replayed over loopback HTTP, as
    `factory run -c examples/pipeline.yaml` would write them), outputs/refine, a smoke run, and input files."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "examples").symlink_to(REPO / "examples")
    (folder / "agent_logs.jsonl").write_text(json.dumps(TAGGED_LOG) + "\n")
    atif = json.loads((Path(__file__).parent / "data" / "interchange" / "harbor_atif.json").read_text())
    (folder / "trajectories.atif.jsonl").write_text(json.dumps(atif) + "\n")
    recordings = load_replay_set(REPO / "benchmarks" / "data" / "refine_replay" / "capable_v1")[:3]
    personas = write_personas(recordings, folder / "personas.jsonl")
    replay, smoke = ReplayServer(recordings), LoopbackServer()
    replay_url = replay.start_in_thread()
    smoke.start_in_thread()
    try:
        demo = ["refine", str(folder / "outputs" / "demo"), "--model", "replay", "--base-url", replay_url]
        assert main([*demo, "--personas", str(personas), "--count", "3", "-q"]) == 0
        argv = ["smoke", str(folder / "outputs" / "smoke"), "--model", "m", "--base-url", smoke.base_url, "-n", "3"]
        assert main([*argv, "-q"]) == 0
    finally:
        replay.stop()
        smoke.stop()
    shutil.copytree(folder / "outputs" / "demo", folder / "outputs" / "refine")
    return folder


@pytest.mark.parametrize("where, line", RUN, ids=[w for w, _ in RUN])
def test_the_readme_command_runs_as_written(where, line, workspace, monkeypatch, capsys):
    # Through the CLI's own main() in the scratch folder: the words a shell would pass, without paying an
    # interpreter start and the package import per command (a subprocess each cost ~3 s of a 10-minute suite).
    monkeypatch.chdir(workspace)
    code = main(shlex.split(line, comments=True)[1:])
    out, err = capsys.readouterr()
    assert code == 0, f"{where}: `{line}` exited {code}\n{out[-2000:]}{err}"
    assert "Traceback" not in err and "note: --run-dir" not in err
