"""ATIF and ADP out and in (issue 27): a run's trajectories round-trip with nothing lost (ids, turns, tool
calls, observations, masks), and files other tools wrote from the public schemas import."""

import json
from pathlib import Path

import pytest
from native_rows import make_native_run

from factory.export import ExportOptions, export_dataset
from factory.export.native import native_row
from factory.export.openai_format import native_sql
from factory.export.selection import selection_sql
from factory.interchange.load import import_file
from factory.store import Store

DATA = Path(__file__).parent / "data" / "interchange"


def native_forms(run: Path) -> dict[str, tuple[list[dict], list[dict]]]:
    """Every kept row's native messages (the trailing observation kept) and tools, by id."""
    with Store.open(run, read_only=True) as store:
        rows = [r for batch in store.arrow_batches(native_sql(selection_sql(ExportOptions(validation=0))))
                for r in batch.to_pylist()]  # fmt: skip
    out = {}
    for row in rows:
        native = native_row(row, keep_trailing=True)
        out[row["trajectory_id"]] = (native.messages, native.tools)
    return out


@pytest.mark.parametrize("kind", ["atif", "adp"])
def test_export_then_import_loses_nothing(tmp_path, kind):
    run = make_native_run(tmp_path / "run")
    result = export_dataset(run, tmp_path / "out", ExportOptions(formats=[kind], validation=0))
    written = tmp_path / "out" / result.formats[0].files["train"][0]
    outcome = import_file(written, tmp_path / "imported")
    assert outcome.imported == 4 and outcome.failed == []
    before, after = native_forms(run), native_forms(tmp_path / "imported")
    assert after.keys() == before.keys() == {"refine:p0", "refine:p1", "coa:odd", "coa:odd2"}
    for key, (messages, tools) in before.items():
        assert after[key] == (messages, tools), key  # turns, calls, results, weights, the last DM line too
    weights = [m["weight"] for m in after["refine:p0"][0] if m["role"] == "assistant"]
    assert weights == [0, 1, 0, 1, 1]


def test_the_imported_rows_export_in_every_native_form_and_no_text_form(tmp_path):
    run = make_native_run(tmp_path / "run")
    result = export_dataset(run, tmp_path / "out", ExportOptions(formats=["atif"], validation=0))
    import_file(tmp_path / "out" / result.formats[0].files["train"][0], tmp_path / "imported")
    again = export_dataset(tmp_path / "imported", tmp_path / "again", ExportOptions(formats=["openai", "messages"]))
    assert [f.name for f in again.formats] == ["openai"]  # their calls exist only natively
    assert sum(again.formats[0].rows.values()) == 4


def test_an_atif_file_written_by_another_tool_imports(tmp_path):
    outcome = import_file(DATA / "harbor_atif.json", tmp_path / "run")
    assert outcome.imported == 1
    messages, tools = native_forms(tmp_path / "run")["terminal-task-0042"]
    assert [t["function"]["name"] for t in tools] == ["bash", "read_file"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "assistant"]
    assert messages[1]["content"] == "Count the lines of notes.txt."  # text parts joined
    call = messages[2]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["read_file", "bash"]
    assert json.loads(call["tool_calls"][1]["function"]["arguments"]) == {"command": "wc -l notes.txt"}
    assert [(m["tool_call_id"], m["name"]) for m in messages[3:5]] == [("call_a", "read_file"), ("call_b", "bash")]
    assert [m["weight"] for m in messages if m["role"] == "assistant"] == [1, 0, 1]  # copied context: not trained


def test_an_adp_file_imports_and_a_broken_line_is_a_failed_row(tmp_path):
    outcome = import_file(DATA / "adp_code.jsonl", tmp_path / "run")
    assert outcome.imported == 1 and len(outcome.failed) == 1
    assert outcome.failed[0].startswith("adp_code.jsonl:2: content[0]: class_ 'image_observation' cannot be imported")
    messages, _ = native_forms(tmp_path / "run")["swe-0007"]
    code = messages[1]["tool_calls"][0]["function"]
    assert code["name"] == "code" and json.loads(code["arguments"]) == {"code": "pytest -q tests/test_utils.py"}
    assert messages[1]["content"] == "Run the tests to see the failure."
    assert messages[-1] == {"role": "assistant", "content": "Fixed the off-by-one in utils.py; the test passes.",
                            "weight": 1}  # fmt: skip
    with Store.open(tmp_path / "run", read_only=True) as store:
        (reason,) = store.query("SELECT reason FROM trajectories WHERE NOT verified")[0]
    assert reason.startswith("import: content[0]: class_ 'image_observation'")


@pytest.mark.parametrize(
    "document, message",
    [
        ({"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "trajectory_id": "t",
          "steps": [{"step_id": 2, "source": "user", "message": "hi"}]}, "steps[0]: step_id must be 1"),
        ({"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "trajectory_id": "t",
          "steps": [{"step_id": 1, "source": "user", "message": "hi",
                     "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {}}]}]},
         "steps[0].tool_calls: only agent steps call tools"),
        ({"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "trajectory_id": "t",
          "steps": [{"step_id": 1, "source": "agent", "message": "",
                     "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {}}],
                     "observation": {"results": [{"source_call_id": "x", "content": "?"}]}}]},
         "steps[0].observation.results[0].source_call_id 'x' is not a call of this step"),
        ({"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"}, "trajectory_id": "t",
          "steps": [{"step_id": 1, "source": "environment", "message": "hi"}]}, "is not system, user or agent"),
    ],
)  # fmt: skip
def test_an_atif_document_that_breaks_the_schema_is_named_in_one_line(tmp_path, document, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(document) + "\n")
    outcome = import_file(path, tmp_path / "run")
    assert outcome.imported == 0 and message in outcome.failed[0] and "\n" not in outcome.failed[0]
