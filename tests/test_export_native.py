"""Native tool calling (issue 27): stored rows as OpenAI messages with tool_calls and a tools list, the
`openai` export, and factory.mask.render through a tool-calling chat template (Qwen2.5's, tests/native_rows.py)."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from consumer_rows import make_consumer_run
from native_rows import make_native_run, qwen_tools_tokenizer

from factory.export import ExportOptions, export_dataset
from factory.export.native import coa_native
from factory.export.registry import FORMATS, SPECS
from factory.mask.render import IGNORE, render


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    run = make_native_run(root / "run")
    out = {}
    for file_type in ("parquet", "jsonl"):
        options = ExportOptions(formats=["openai"], validation=0, file_type=file_type)
        result = export_dataset(run, root / file_type, options)
        files = result.formats[0].files["train"]
        if file_type == "parquet":
            out[file_type] = [r for f in files for r in pq.read_table(root / file_type / f).to_pylist()]
        else:
            out[file_type] = [
                json.loads(line) for f in files for line in (root / file_type / f).read_text().splitlines()
            ]
    return out


def by_id(rows):
    return {row["id"]: row for row in rows}


def test_a_refine_row_calls_its_scripts_actions_as_tools(exported):
    row = by_id(exported["jsonl"])["refine:p0"]
    assert [t["function"]["name"] for t in row["tools"]] == ["go", "take", "water"]
    litres = row["tools"][2]["function"]["parameters"]["properties"]["litres"]
    assert litres == {"type": "integer", "enum": [1, 2, 3]}  # typed, the valid values
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4 + ["assistant"]  # the last DM line dropped
    calls = [m for m in row["messages"] if m["role"] == "assistant"]
    assert [json.loads(m["tool_calls"][0]["function"]["arguments"]) for m in calls][:2] == [
        {"place": "attic"},
        {"item": "watering_can"},
    ]
    assert [m["weight"] for m in calls] == [0, 1, 0, 1, 1]  # the two mistakes stay in context, out of the loss
    tools = [m for m in row["messages"] if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == [c["tool_calls"][0]["id"] for c in calls[:4]]
    assert "You are in the kitchen" in row["messages"][1]["content"]  # the opening observation, no action list
    assert "Available actions" not in row["messages"][1]["content"]


def test_a_coa_row_calls_its_tools_and_answers_last(exported):
    row = by_id(exported["jsonl"])["coa:odd"]
    assert [t["function"]["name"] for t in row["tools"]] == ["code"]
    assistant = [m for m in row["messages"] if m["role"] == "assistant"]
    call = assistant[0]["tool_calls"][0]["function"]
    assert call["name"] == "code" and "sum(range(1, 200, 2))" in json.loads(call["arguments"])["code"]
    assert assistant[0]["content"].startswith("<think>") and "<plan>" in assistant[0]["content"]
    assert row["messages"][1] == {"role": "user", "content": "What is the sum of the first 100 odd numbers? Use code."}
    tool = next(m for m in row["messages"] if m["role"] == "tool")
    assert tool["content"].startswith("10000 10000") and tool["name"] == "code"
    assert assistant[-1]["content"].endswith("\\boxed{10000}") and "tool_calls" not in assistant[-1]


def test_parquet_holds_tools_as_json_text_and_jsonl_as_a_list(exported):
    parquet, jsonl = by_id(exported["parquet"]), by_id(exported["jsonl"])
    assert parquet.keys() == jsonl.keys() == {"refine:p0", "refine:p1", "coa:odd", "coa:odd2"}
    for key in parquet:
        assert json.loads(parquet[key]["tools"]) == jsonl[key]["tools"]


def test_render_trains_the_calls_and_not_the_mistakes_or_the_results(exported):
    tokenizer = qwen_tools_tokenizer()
    for row in exported["parquet"]:
        rendered = render(row, tokenizer)
        text = tokenizer.decode(rendered.input_ids)
        trained = tokenizer.decode([t for t, label in zip(rendered.input_ids, rendered.labels) if label != IGNORE])
        assert "<tools>" in text and "<tool_response>" in text  # the template was given tools and tool messages
        assert "<tool_response>" not in trained and "# Tools" not in trained
        if row["id"].startswith("refine"):
            assert '{"name": "take", "arguments": {"item": "watering_can"}}' in trained  # arguments as JSON, once
            assert '"attic"' in text and '"attic"' not in trained  # the mistaken call: context only
        else:
            assert '{"name": "code", "arguments": {"code": "```py' in trained and trained.endswith("<|im_end|>")


def test_rows_that_do_not_convert_are_counted_not_written(tmp_path):
    run = make_consumer_run(tmp_path / "run", coa=False)  # refine rows stored without their steps and script
    result = export_dataset(run, tmp_path / "out", ExportOptions(formats=["messages", "openai"], validation=0))
    assert [f.name for f in result.formats] == ["messages"]
    assert any("openai: skipped" in w for w in result.warnings), result.warnings


def test_an_afm_completion_that_does_not_read_cleanly_has_a_reason():
    native = coa_native("Task: x", "<think>\nunclosed")
    assert native.messages is None and "do not read cleanly" in native.reason


def test_every_format_is_declared_once_in_the_registry():
    assert FORMATS == tuple(spec.name for spec in SPECS) and "openai" in FORMATS
    assert len(set(FORMATS)) == len(FORMATS) and all(spec.empty for spec in SPECS)


def test_a_template_without_tool_support_is_refused_not_silently_emptied(exported):
    from factory.mask.rows import RenderError
    from factory.mask.tiny import tiny_tokenizer

    row = by_id(exported["parquet"])["refine:p0"]  # ChatML without tool branches: calls and tools would vanish
    with pytest.raises(RenderError, match=r"messages\[2\]\.tool_calls: the chat template does not write"):
        render(row, tiny_tokenizer())
    no_calls = {**row, "messages": [m for m in row["messages"][:2]] + [{"role": "assistant", "content": "done"}]}
    with pytest.raises(RenderError, match="tools: the chat template does not write the tools"):
        render(no_calls, tiny_tokenizer())


def test_the_card_gives_each_trainer_its_config_for_the_native_rows(tmp_path):
    run = make_native_run(tmp_path / "run")
    export_dataset(run, tmp_path / "out", ExportOptions(formats=["openai"], validation=0))
    card = (tmp_path / "out" / "README.md").read_text()
    assert "pkg://factory.export.verl_sft" in card and "NativeSFTDataset" in card  # verl's custom_cls
    assert "message_field_training: weight" in card and "out/openai" in card  # axolotl, pointed at these rows
    assert "--tool-calls native" in card  # TRL: the pre-tokenized export


def test_the_qwen_fixture_renders_as_the_public_qwen25_template(exported):
    """tests/native_rows.py's template against the public Qwen2.5 template TRL installs (its chat_templates)."""
    trl = pytest.importorskip("trl")
    public = qwen_tools_tokenizer()
    public.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    for row in exported["parquet"]:
        assert render(row, public).input_ids == render(row, qwen_tools_tokenizer()).input_ids, row["id"]
