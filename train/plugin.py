"""The trainer as factory finds it (the `factory.plugins` entry point, see factory/plugins.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .config import RUN_CONTROL_FIELDS  # pydantic only: fingerprinting a run needs no torch

__all__ = ["RUN_CONTROL_FIELDS", "last_checkpoint", "main", "train_stage"]


def main(argv: list[str]) -> int:
    from .sft import main as sft_main

    return sft_main(argv)


def last_checkpoint(output_dir: str | Path) -> Path | None:
    from .checkpoint import last_checkpoint as newest

    return newest(output_dir)


def train_stage(config_path: str, flags: list[str]) -> list[str]:
    """The pipeline's train stage: load the config with the pipeline's flags, drop checkpoints this data and
    config did not make, train; the lines to show."""
    import json

    from transformers.utils import logging as hf_logging

    from .config import load_config
    from .sft import train

    hf_logging.disable_progress_bar()  # per-file load/save bars would drown the stage's lines
    config = load_config(config_path, flags)
    removed = remove_stale_checkpoints(config)
    metrics = train(config)
    shown = {key: metrics[key] for key in ("steps", "train_loss", "eval_loss", "trained_tokens") if key in metrics}
    lines = [f"removed {len(removed)} checkpoint(s) made from other data or another config: {', '.join(removed)}"]
    return (lines if removed else []) + [f"trained: {json.dumps(shown)} -> {config.output_dir}"]


def remove_stale_checkpoints(config) -> list[str]:
    """Remove the finished checkpoints in output_dir whose config or data hash is not this run's (unless the
    config forces a resume), so training resumes only from its own and eval never plays an older model."""
    from .checkpoint import foreign_checkpoints
    from .config import config_hash
    from .data import data_files_hash

    if config.force_resume:
        return []
    stale = foreign_checkpoints(config.output_dir, config_hash(config), data_files_hash(config.data))
    for checkpoint in stale:
        shutil.rmtree(checkpoint)
    return [checkpoint.name for checkpoint in stale]
