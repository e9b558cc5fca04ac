"""TRL's SFTTrainer trains exactly the tokens train.render says train, on the `trl` export.

The export is pre-tokenized with a named tokenizer (a folder here, as a user's would be); TRL's own
dataset preparation and collator turn it into labels, which are compared with train.render's token by
token. The `messages` export, which TRL reads without its weights, is the negative control.
"""

from __future__ import annotations

import datasets
import pytest
import torch
from consumer_rows import make_consumer_run, qwen_tokenizer

from factory.export import ExportError, ExportOptions, export_dataset
from train.render import IGNORE, render
from train.tiny import tiny_model

trl = pytest.importorskip("trl")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("trl")
    tokenizer_dir = root / "tokenizer"
    qwen_tokenizer().save_pretrained(tokenizer_dir)
    options = ExportOptions(formats=["messages", "trl"], validation=0, tokenizer=str(tokenizer_dir))
    result = export_dataset(make_consumer_run(root / "run"), root / "out", options)
    return root / "out", result


def loaded(out, fmt: str) -> datasets.Dataset:
    return datasets.load_dataset("parquet", data_files=str(out / fmt / "train-*.parquet"))["train"]


def trl_labels(dataset: datasets.Dataset, tmp_path, **config) -> list[list[int]]:
    """Labels as TRL's SFTTrainer feeds them to the model: its dataset preparation, then its collator."""
    tokenizer = qwen_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token
    values = {"output_dir": str(tmp_path / "sft"), "report_to": [], "max_length": None, "use_cpu": True, "bf16": False}
    args = trl.SFTConfig(**{**values, **config})
    trainer = trl.SFTTrainer(model=tiny_model(tokenizer), args=args, train_dataset=dataset, processing_class=tokenizer)
    prepared = trainer.train_dataset
    columns = [c for c in prepared.column_names if c in ("input_ids", "labels")]
    batch = trainer.data_collator([{c: row[c] for c in columns} for row in prepared])
    lengths = [len(row["input_ids"]) for row in prepared]
    return [batch["labels"][i, :n].tolist() for i, n in enumerate(lengths)], [row["input_ids"] for row in prepared]


def test_trl_trains_exactly_the_rendered_tokens(exported, tmp_path):
    out, _ = exported
    rows = loaded(out, "messages")
    tokenizer = qwen_tokenizer()
    expected = {tuple(r.input_ids): r.labels for r in (render(row, tokenizer) for row in rows) if not r.reason}
    labels, input_ids = trl_labels(loaded(out, "trl"), tmp_path)
    assert len(labels) == len(expected) == 5
    for ids, got in zip(input_ids, labels):
        assert got == expected[tuple(ids)], "TRL's labels differ from render's"
    assert all(any(label != IGNORE for label in got) for got in labels)


def test_trl_with_assistant_only_loss_or_packing_keeps_the_masks(exported, tmp_path):
    """The pre-tokenized masks apply whatever loss switches the user's config sets."""
    out, _ = exported
    reference, _ = trl_labels(loaded(out, "trl"), tmp_path)
    for config in ({"completion_only_loss": True}, {"packing": True, "max_length": 4096}):
        labels, _ = trl_labels(loaded(out, "trl"), tmp_path, **config)
        flat = torch.tensor([x for row in labels for x in row])
        assert int((flat != IGNORE).sum()) == sum(1 for row in reference for x in row if x != IGNORE), config


def test_trl_reading_the_messages_export_trains_the_mistakes(exported, tmp_path):
    """The negative control: TRL on `messages` (weights ignored), even with assistant_only_loss asked for."""
    out, _ = exported
    rows = loaded(out, "messages").select_columns(["messages"])
    labels, _ = trl_labels(rows, tmp_path)
    trained_text = "".join(qwen_tokenizer().decode([x for x in row if x != IGNORE]) for row in labels)
    assert "Action: take(item=iron key)" in trained_text and "Observation: There is no iron key" in trained_text


def test_trl_export_needs_a_tokenizer(tmp_path):
    run = make_consumer_run(tmp_path / "run")
    with pytest.raises(ExportError, match="name the tokenizer"):
        export_dataset(run, tmp_path / "out", ExportOptions(formats=["trl"]))
    result = export_dataset(run, tmp_path / "all", ExportOptions())
    assert "trl" not in [f.name for f in result.formats]
    assert any(w.startswith("trl: skipped") for w in result.warnings)
