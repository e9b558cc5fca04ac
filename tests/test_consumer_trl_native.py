"""TRL trains exactly factory.mask.render's tokens on native tool-call rows (issue 27).

The `trl` export with `tool_calls: native` is pre-tokenized from the `openai` form through a tool-calling
chat template (Qwen2.5's, tests/native_rows.py): the tools in the system block, each call as the template
writes it. TRL's own dataset preparation and collator turn it into labels, compared with render's token
by token; a mixed refine + coa export trains both sources under this one config. TRL reading the
conversational `openai` rows itself is the control: it passes `tools` to the template, but it ignores the
per-message weight (a refine mistake trains), which is why the card points TRL at the `trl` export.
"""

from __future__ import annotations

import datasets
import pytest
from native_rows import make_native_run, qwen_tools_tokenizer
from test_consumer_trl import trl_labels

from factory.export import ExportOptions, export_dataset
from factory.export.snippets import trl_config, trl_data_files
from factory.mask.render import IGNORE, render

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("trl_native")
    tokenizer_dir = root / "tokenizer"
    qwen_tools_tokenizer().save_pretrained(tokenizer_dir)
    options = ExportOptions(formats=["openai", "trl"], validation=0, tokenizer=str(tokenizer_dir), tool_calls="native")
    result = export_dataset(make_native_run(root / "run"), root / "out", options)
    return root / "out", result


def native_rows(out) -> datasets.Dataset:
    return datasets.load_dataset("parquet", data_files=str(out / "openai" / "train-*.parquet"))["train"]


def test_trl_trains_exactly_the_rendered_tokens_of_native_rows(exported, tmp_path):
    out, result = exported
    settings = next(f.settings for f in result.formats if f.name == "trl")
    builder, files = trl_data_files(settings, str(out / "trl"), result.options.file_type)
    labels, input_ids = trl_labels(datasets.load_dataset(builder, data_files=files)["train"], tmp_path,
                                   **trl_config({"max_length": None}))  # fmt: skip
    tokenizer = qwen_tools_tokenizer()
    expected = {tuple(r.input_ids): r.labels for r in (render(row, tokenizer) for row in native_rows(out))}
    assert len(labels) == 4 and sorted(map(tuple, input_ids)) == sorted(expected)  # refine and coa, one config
    for ids, got in zip(input_ids, labels):
        assert got == expected[tuple(ids)], "TRL's labels differ from render's"
    trained = "".join(tokenizer.decode([x for x in row if x != IGNORE]) for row in labels)
    assert '<tool_call>\n{"name": "take"' in trained and '"attic"' not in trained and "<tool_response>" not in trained


def test_trl_tokenizing_the_openai_rows_itself_passes_the_tools_but_trains_the_mistakes(exported, tmp_path):
    out, _ = exported
    rows = native_rows(out).select_columns(["messages", "tools"])
    rows = rows.map(lambda row: {"messages": [_plain(m) for m in row["messages"]]})
    labels, input_ids = trl_labels(rows, tmp_path, qwen_tools_tokenizer())
    text = qwen_tools_tokenizer().decode(input_ids[0])
    assert "<tools>" in text and '"name": "go"' in text  # TRL hands `tools` (JSON text) to the template
    trained = "".join(qwen_tools_tokenizer().decode([x for x in row if x != IGNORE]) for row in labels)
    assert "attic" in trained  # the refine mistake: TRL has no per-message weight


def _plain(message: dict) -> dict:
    """A message as TRL's tokenizer call gets it from the dataset (Arrow fills absent keys with None)."""
    return {k: v for k, v in message.items() if v is not None and k != "weight"}
