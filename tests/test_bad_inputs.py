"""Bad user inputs through the real `factory` entry point (issue 14): each is one line (exit 2) before
any LLM call, or a counted skip, never a traceback or a run on nothing. The model is the loopback
server over real HTTP, so a test sees every request the factory would have paid for."""

import json

import pytest

from factory.cli import main
from factory.personas import load_personas
from factory.personas.loaders import MAX_PERSONA_CHARS

QA_TASK = {"id": "q1", "question": "Which animal lays eggs and has venom?", "answer": "platypus"}
GOOD = "A baker in Lyon who restores old wood-fired ovens"


def jsonl(path, *rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def refine(server, tmp_path, personas, *extra):
    argv = ["refine", "--model", "loopback", "--base-url", server.base_url, "--personas", personas,
            str(tmp_path / "run"), "--no-code", "-q", *extra]  # fmt: skip
    return main(argv)


def coa(server, tmp_path, corpus):
    tasks = jsonl(tmp_path / "tasks.jsonl", QA_TASK)
    argv = ["coa", "--model", "loopback", "--base-url", server.base_url, "--tasks", tasks, "--corpus", corpus,
            "--variant", "mas", str(tmp_path / "run"), "-q"]  # fmt: skip
    return main(argv)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    return err


# --- personas ------------------------------------------------------------------------------------


def test_a_csv_with_only_a_header_is_the_same_error_as_an_empty_jsonl(server, tmp_path, capsys):
    (tmp_path / "p.csv").write_text("id,persona\n")
    (tmp_path / "p.jsonl").write_text("")
    assert refine(server, tmp_path, str(tmp_path / "p.csv")) == 2
    assert one_error_line(capsys) == f"error: {tmp_path / 'p.csv'}: no rows (only a header)"
    assert refine(server, tmp_path, str(tmp_path / "p.jsonl")) == 2
    assert one_error_line(capsys) == f"error: {tmp_path / 'p.jsonl'}: no rows (the file is empty)"
    (tmp_path / "empty.csv").write_text("")
    assert refine(server, tmp_path, str(tmp_path / "empty.csv")) == 2
    assert one_error_line(capsys).endswith("empty.csv: no rows (the file is empty)")
    (tmp_path / "blank.jsonl").write_text('{"persona": ""}\n{"persona": "  "}\n')
    assert refine(server, tmp_path, str(tmp_path / "blank.jsonl")) == 2
    assert one_error_line(capsys).endswith("blank.jsonl: no rows (every row has a blank 'persona')")
    assert server.requests == [] and not (tmp_path / "run").exists()


def test_a_1mb_persona_is_skipped_counted_and_named_and_never_sent(server, tmp_path, capsys, caplog):
    huge = "A persona pasted with a whole document. " * 25_000  # ~1 MB, as in the issue
    path = jsonl(tmp_path / "p.jsonl", {"id": "ok1", "persona": GOOD}, {"id": "huge", "persona": huge},
                 {"id": "ok2", "persona": "A ferry pilot on Lake Geneva"})  # fmt: skip
    assert refine(server, tmp_path, path, "--count", "3") == 0
    # a warning line (on stderr from the CLI, through logging's last-resort handler; pytest captures it here)
    [warning] = [r for r in caplog.records if r.name == "factory.personas.loaders"]
    err = warning.getMessage()
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert (
        f"personas skipped (too long to be a persona): 1; first: {path}:2 ({len(huge.strip())} characters)"
        in captured.out
    )
    assert f"{path}: skipped 1 of 3 persona rows longer than {MAX_PERSONA_CHARS} characters" in err
    assert f"first: {path}:2 ({len(huge.strip())} characters)" in err and "\n" not in err
    assert server.requests, "the usable personas still run"
    assert max(len(json.dumps(r["body"])) for r in server.requests) < 50_000
    assert not any("pasted with a whole document" in json.dumps(r["body"]) for r in server.requests)


def test_a_file_of_only_overlong_personas_is_one_line(server, tmp_path, capsys):
    path = jsonl(tmp_path / "p.jsonl", {"persona": "x" * (MAX_PERSONA_CHARS + 1)})
    assert refine(server, tmp_path, path) == 2
    assert one_error_line(capsys) == (
        f"error: {path}: no usable persona: the only row is longer than {MAX_PERSONA_CHARS} characters "
        f"(a persona is a short description); first: {path}:1 ({MAX_PERSONA_CHARS + 1} characters)"
    )
    assert server.requests == []


def test_the_bound_is_inclusive_and_skips_are_listed(tmp_path):
    at_bound = "y" * MAX_PERSONA_CHARS
    path = jsonl(tmp_path / "p.jsonl", {"persona": at_bound}, {"persona": at_bound + "y"})
    loaded = load_personas(path)
    assert [p.text for p in loaded] == [at_bound] and loaded.too_long == [
        f"{path}:2 ({MAX_PERSONA_CHARS + 1} characters)"
    ]


# --- the --corpus of the local web_search --------------------------------------------------------


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("missing.jsonl", None, "missing.jsonl: corpus file not found"),
        ("empty.jsonl", "", "no documents (expected rows with id, title and text)"),
        ("notes.jsonl", "these are my notes\nnot a corpus\n", "Malformed JSON"),
        ("wrong.jsonl", '{"question": "q", "answer": "a"}\n', "1 document(s) have no id or no text"),
        ("latin1.jsonl", b'{"id": "1", "title": "caf\xe9", "text": "x"}\n', "invalid UTF-8"),
        ("folder", "dir", "folder: not a file"),
        ("bad.parquet", b"PAR1 not really", "bad.parquet: cannot index the corpus: Invalid Input Error"),
    ],
)
def test_a_missing_or_fake_corpus_stops_before_any_llm_call(server, tmp_path, capsys, name, content, problem):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert coa(server, tmp_path, str(path)) == 2
    err = one_error_line(capsys)
    assert err.startswith("error: web_search: the local corpus cannot be searched: ") and problem in err
    assert str(path) in err and "LINE 1" not in err
    assert server.requests == [] and not (tmp_path / "run").exists()


def test_a_good_corpus_passes_the_check(tmp_path):
    from factory.coa.tools import ToolBox, ToolsConfig

    corpus = jsonl(tmp_path / "c.jsonl", {"id": "1", "title": "Platypus", "text": "The platypus lays eggs."})
    toolbox = ToolBox.from_config(
        ToolsConfig.model_validate({"web_search": {"enabled": True, "local": {"path": corpus}}})
    )
    try:
        assert "web_search" in toolbox
    finally:
        toolbox.close()


def test_the_bound_can_be_set_by_a_caller(tmp_path):
    path = jsonl(tmp_path / "p.jsonl", {"persona": GOOD}, {"persona": "short"})
    assert [p.text for p in load_personas(path, max_chars=10)] == ["short"]


@pytest.mark.parametrize(
    "out, said",
    [("a-file", "a file is in the way"), ("a-file/under", "Not a directory"), ("/proc/factory-export", "No such file")],
)
def test_an_export_folder_that_cannot_be_one_is_one_line_and_leaves_nothing(tmp_path, capsys, out, said):
    from test_export import make_run

    run = make_run(tmp_path / "run")
    (tmp_path / "a-file").write_text("not a folder")
    target = out if out.startswith("/") else str(tmp_path / out)
    assert main(["export", str(run), "--out", target]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"error: cannot create export folder {target}: ") and said in err
    assert (tmp_path / "a-file").read_text() == "not a folder"


def test_missing_cells_are_not_personas(tmp_path, capsys, server):
    """Spreadsheets and pandas write a missing cell as NaN, null, N/A...: a blank row, not a persona."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "p.csv").write_text("id,persona\n1,A retired lighthouse keeper\n2,NaN\n3,N/A\n4,null\n5,none\n")
    pq.write_table(pa.table({"persona": ["A beekeeper in Oaxaca", None, "nan", "<NA>"]}), tmp_path / "p.parquet")
    # Python's json writes and reads NaN as a bare literal
    jsonl(tmp_path / "p.jsonl", {"persona": "A night-shift nurse"}, {"persona": None}, {"persona": float("nan")})
    assert [p.text for p in load_personas(tmp_path / "p.csv")] == ["A retired lighthouse keeper"]
    assert [p.text for p in load_personas(tmp_path / "p.parquet")] == ["A beekeeper in Oaxaca"]
    assert [p.text for p in load_personas(tmp_path / "p.jsonl")] == ["A night-shift nurse"]
    (tmp_path / "only.csv").write_text("persona\nNaN\nN/A\n")
    assert refine(server, tmp_path, str(tmp_path / "only.csv")) == 2
    assert one_error_line(capsys).endswith("only.csv: no rows (every row has a blank 'persona')")
    assert server.requests == []
