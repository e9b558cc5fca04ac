"""LLaMA-Factory trains exactly factory.mask.render's tokens on native tool-call samples (issue 27).

The `llamafactory` export with `tool_calls: native` (function_call / observation turns, a `tools` column)
goes through LLaMA-Factory's own data path (dataset_info.json, the sharegpt converter, the supervised
processor, its `qwen` template and Qwen tool format) with the card's config, on a tokenizer whose template
is Qwen2.5's with its tool branches. Each sample must be a prefix of one native row's render, and the
samples of a row together train exactly render's labels (with `train_turn_suffix`, LLaMA-Factory's rule):
refine rows (mistaken calls stay context) and coa rows in one export, under one config.
"""

from __future__ import annotations

import datasets
from consumer_harness import llamafactory_samples
from native_rows import make_native_run, qwen_tools_tokenizer
from test_consumer_llamafactory import trained

from factory.export import ExportOptions, export_dataset
from factory.export.snippets import llamafactory_config
from factory.mask.render import IGNORE, render


def export(tmp_path):
    run = make_native_run(tmp_path / "run")
    options = ExportOptions(formats=["openai", "llamafactory"], validation=0, tool_calls="native")
    result = export_dataset(run, tmp_path / "out", options)
    return tmp_path / "out", next(f for f in result.formats if f.name == "llamafactory").settings


def test_llamafactory_trains_the_native_calls_render_trains(tmp_path, monkeypatch):
    out, settings = export(tmp_path)
    config = llamafactory_config(settings, str(out / "llamafactory"))
    assert config["mask_history"] is True and config["template"] == "qwen"
    samples = llamafactory_samples(monkeypatch, tmp_path, qwen_tools_tokenizer(), **config)
    tokenizer = qwen_tools_tokenizer()
    rows = datasets.load_dataset("parquet", data_files=str(out / "openai" / "train-*.parquet"))["train"]
    expected = {row["id"]: render(row, tokenizer, train_turn_suffix=True) for row in rows}
    got: dict[str, dict[int, int]] = {row_id: {} for row_id in expected}
    for sample in samples:
        ids = list(sample["input_ids"])
        owners = [row_id for row_id, r in expected.items() if r.input_ids[: len(ids)] == ids]
        assert len(owners) == 1, "a LLaMA-Factory sample is not a prefix of exactly one rendered native row"
        got[owners[0]].update(trained(sample["labels"]))
    for row_id, rendered in expected.items():
        assert got[row_id] == trained(rendered.labels), f"{row_id}: LLaMA-Factory's labels differ from render's"
    assert len(samples) == 3 + 3 + 2 + 2  # a sample per trained turn: refine 3 each, coa 2 each
    text = "".join(tokenizer.decode([x for x in s["labels"] if x != IGNORE]) for s in samples)
    assert '<tool_call>\n{"name": "go", "arguments": {"place": "garden"}}\n</tool_call>' in text
    assert '"attic"' not in text and "<tool_response>" not in text
