"""Consumers' own data code, loaded for tests: LLaMA-Factory's dataset loader and supervised processor,
axolotl's chat_template strategy. Each returns (input_ids, labels) per sample exactly as the trainer would.

LLaMA-Factory's package __init__ files import its whole training stack (gradio, torchaudio, …); its data
modules are imported here without them. `torchaudio` (imported at the top of its multimodal plugin, used only
for audio inputs) gets an empty placeholder module when it is not installed; no audio passes through here.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
import types
from pathlib import Path

import pytest


def import_llamafactory(monkeypatch):
    """LLaMA-Factory's data and hparams packages (skips the test when it is not installed)."""
    spec = importlib.util.find_spec("llamafactory")
    if spec is None:
        pytest.skip("llamafactory not installed (pip install --no-deps llamafactory==0.9.5)")
    root = spec.submodule_search_locations[0]
    for package in ("llamafactory.data", "llamafactory.hparams"):
        module = types.ModuleType(package)
        module.__path__ = [f"{root}/{package.split('.')[1]}"]
        monkeypatch.setitem(sys.modules, package, module)
    if importlib.util.find_spec("torchaudio") is None:
        placeholder = types.ModuleType("torchaudio")
        placeholder.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
        monkeypatch.setitem(sys.modules, "torchaudio", placeholder)
    from llamafactory.data.loader import get_dataset
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams.data_args import DataArguments
    from llamafactory.hparams.model_args import ModelArguments

    return get_dataset, get_template_and_fix_tokenizer, DataArguments, ModelArguments


def llamafactory_samples(monkeypatch, tmp_path: Path, tokenizer, stage: str = "sft", **config) -> list[dict]:
    """Run LLaMA-Factory's data path for `stage` (dataset_info.json -> load -> sharegpt converter -> the
    supervised processor for "sft", the pairwise one for "rm") with a training config's data keys
    (`dataset_dir`, `dataset`, `template`, `mask_history`, …)."""
    get_dataset, get_template, DataArguments, ModelArguments = import_llamafactory(monkeypatch)
    from transformers import Seq2SeqTrainingArguments

    data_args = DataArguments(**{"cutoff_len": 1 << 20, "preprocessing_num_workers": None, **config})
    model_args = ModelArguments(model_name_or_path="unused", cache_dir=str(tmp_path / "cache"))
    training_args = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "lf"), report_to=[])
    template = get_template(tokenizer, data_args)
    logging.getLogger("llamafactory").setLevel(logging.ERROR)
    module = get_dataset(template, model_args, data_args, training_args, stage, tokenizer)
    return list(module["train_dataset"])


def axolotl_samples(tokenizer, rows: list[dict], dataset: dict, sequence_len: int = 1 << 16) -> list[dict]:
    """axolotl's chat_template strategy, configured by one `datasets:` entry of an axolotl config (checked
    against axolotl's own schema first), over the rows: its input_ids and labels per row."""
    if importlib.util.find_spec("axolotl") is None:
        pytest.skip("axolotl not installed (pip install --no-deps axolotl==0.19.0)")
    from axolotl.prompt_strategies.chat_template import load
    from axolotl.utils.dict import DictDefault
    from axolotl.utils.schemas.datasets import SFTDataset

    entry = SFTDataset(**dataset).model_dump(exclude_none=True)
    cfg = DictDefault({"sequence_len": sequence_len, "train_on_inputs": False, "chat_template": "tokenizer_default"})
    logging.getLogger("axolotl").setLevel(logging.ERROR)
    strategy = load(tokenizer, cfg, entry)
    return [strategy.tokenize_prompt(row) for row in rows]
