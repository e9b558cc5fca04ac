"""TRL's SFTTrainer trains exactly the tokens factory.mask.render says train, on the `trl` export.

The export is pre-tokenized with a named tokenizer (a folder here, as a user's would be); TRL's own
dataset preparation and collator turn it into labels, which are compared with factory.mask.render's token by
token. The `messages` export, which TRL reads without its weights, is the negative control.
"""

from __future__ import annotations

import datasets
import pytest
from consumer_rows import make_consumer_run, qwen_tokenizer

from factory.export import ExportError, ExportOptions, export_dataset
from factory.export.snippets import trl_config, trl_data_files
from factory.mask.render import IGNORE, render
from factory.mask.tiny import tiny_model

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


def trl_export(exported) -> datasets.Dataset:
    """The trl rows loaded as the card's snippet loads them (snippets.trl_data_files)."""
    out, result = exported
    settings = next(f.settings for f in result.formats if f.name == "trl")
    builder, files = trl_data_files(settings, str(out / "trl"), result.options.file_type)
    return datasets.load_dataset(builder, data_files=files)["train"]


def trl_labels(
    dataset: datasets.Dataset, tmp_path, tokenizer=None, **config
) -> tuple[list[list[int]], list[list[int]]]:
    """Labels as TRL's SFTTrainer feeds them to the model: its dataset preparation, then its collator.
    Packed rows are cut back into their sequences (`seq_lengths`), so each can be compared with its render."""
    tokenizer = tokenizer or qwen_tokenizer()
    tokenizer.pad_token = tokenizer.eos_token
    values = {"output_dir": str(tmp_path / "sft"), "report_to": [], "use_cpu": True, "bf16": False}
    args = trl.SFTConfig(**{**values, **config})
    trainer = trl.SFTTrainer(model=tiny_model(tokenizer), args=args, train_dataset=dataset, processing_class=tokenizer)
    prepared = trainer.train_dataset
    columns = [c for c in prepared.column_names if c in ("input_ids", "labels")]
    batch = trainer.data_collator([{c: row[c] for c in columns} for row in prepared])
    flat = batch["labels"].shape[0] == 1  # padding_free: every row in one flattened sequence
    labels, input_ids, offset = [], [], 0
    for i, row in enumerate(prepared):
        start = 0
        for length in row.get("seq_lengths") or [len(row["input_ids"])]:
            row_labels = (
                batch["labels"][0, offset + start : offset + start + length]
                if flat
                else batch["labels"][i, start : start + length]
            )
            labels.append(row_labels.tolist())
            input_ids.append(row["input_ids"][start : start + length])
            start += length
        offset += start if flat else 0
    return labels, input_ids


def expected_labels(exported) -> dict[tuple, list[int]]:
    out, _ = exported
    tokenizer = qwen_tokenizer()
    rendered = (render(row, tokenizer) for row in loaded(out, "messages"))
    return {tuple(r.input_ids): r.labels for r in rendered if not r.reason}


def check_against_render(exported, labels: list[list[int]], input_ids: list[list[int]]) -> None:
    expected = expected_labels(exported)
    assert sorted(map(tuple, input_ids)) == sorted(expected), "TRL dropped, cut or merged a row"
    for ids, got in zip(input_ids, labels):
        assert got == expected[tuple(ids)], "TRL's labels differ from render's"


def test_trl_trains_exactly_the_rendered_tokens(exported, tmp_path):
    labels, input_ids = trl_labels(trl_export(exported), tmp_path, **trl_config({"max_length": None}))
    assert len(labels) == 5
    check_against_render(exported, labels, input_ids)
    assert all(any(label != IGNORE for label in got) for got in labels)


@pytest.mark.parametrize(
    "config",
    [{"completion_only_loss": True}, {"packing": True, "max_length": 4096}, {"padding_free": True, "max_length": None}],
)
def test_trl_loss_switches_and_packing_keep_the_masks_in_place(exported, tmp_path, config):
    labels, input_ids = trl_labels(trl_export(exported), tmp_path, **config)
    check_against_render(exported, labels, input_ids)


def test_trl_refuses_assistant_only_loss_on_the_pre_tokenized_rows(exported, tmp_path):
    """Why the card says to leave it unset: TRL raises rather than mask differently."""
    with pytest.raises(ValueError, match="not conversational"):
        trl_labels(trl_export(exported), tmp_path, assistant_only_loss=True)


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
