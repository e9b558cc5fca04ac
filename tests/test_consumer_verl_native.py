"""verl's multi-turn SFT dataset trains exactly factory.mask.render's tokens on native tool-call rows (issue 27).

The `openai` export is read through verl's own `MultiTurnSFTDataset` code, via the subclass the card names as
`data.custom_cls` (factory/export/verl_sft.py: tools and arguments read as JSON, Arrow's filled-in keys
dropped, weight-0 messages out of the loss), on a tokenizer with Qwen2.5's tool-calling template; its
`loss_mask` is compared with render's labels (`train_turn_suffix`: verl trains the newline after
<|im_end|>). verl's stock dataset on the same rows is the control: it trains the refine mistakes.
verl 0.9.1 imports a Qwen2-VL helper that transformers 5.24 lacks; it is used only for Qwen-VL position
ids, so the test gives that one import an empty stand-in.
"""

from __future__ import annotations

import sys
import types

import pytest
from native_rows import make_native_run, qwen_tools_tokenizer

from factory.export import ExportOptions, export_dataset
from factory.mask.render import IGNORE, render

pytest.importorskip("verl", reason="verl is installed with --no-deps (README)")


@pytest.fixture
def verl_datasets(monkeypatch):
    stand_in = types.ModuleType("verl.models.transformers.qwen2_vl")
    stand_in.get_rope_index = lambda *args, **kwargs: None
    monkeypatch.setitem(sys.modules, "verl.models.transformers.qwen2_vl", stand_in)
    from omegaconf import OmegaConf
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from factory.export.verl_sft import NativeSFTDataset

    config = OmegaConf.create({"max_length": 4096, "truncation": "error", "pad_mode": "no_padding"})
    return MultiTurnSFTDataset, NativeSFTDataset, config


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("verl_native")
    result = export_dataset(
        make_native_run(root / "run"), root / "out", ExportOptions(formats=["openai"], validation=0)
    )
    import pyarrow.parquet as pq

    files = [str(root / "out" / path) for path in result.formats[0].files["train"]]
    return files, [row for f in files for row in pq.read_table(f).to_pylist()]


def trained_positions(mask) -> list[int]:
    return [i for i, x in enumerate(mask) if x]


def test_verl_trains_exactly_the_rendered_tokens_of_native_rows(verl_datasets, exported):
    _, native_dataset, config = verl_datasets
    files, rows = exported
    tokenizer = qwen_tools_tokenizer()
    dataset = native_dataset(parquet_files=files, tokenizer=tokenizer, config=config)
    assert len(dataset) == len(rows) == 4
    for i, row in enumerate(rows):
        item = dataset[i]
        rendered = render(row, tokenizer, train_turn_suffix=True)
        assert item["input_ids"].tolist() == rendered.input_ids, row["id"]
        expected = [p for p, label in enumerate(rendered.labels) if label != IGNORE]
        assert trained_positions(item["loss_mask"].tolist()) == expected, f"{row['id']}: verl's loss mask differs"


def test_verls_stock_dataset_cannot_read_the_rows_right(verl_datasets, exported):
    stock, _, config = verl_datasets
    files, _ = exported
    with pytest.raises(ValueError, match="Tools should either be a JSON schema"):  # tools as JSON text
        stock(parquet_files=files, tokenizer=qwen_tools_tokenizer(), config=config)[0]
