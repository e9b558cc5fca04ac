"""The `train` and `eval` stages of `factory run`: SFT on this run's export, then the checkpoint as the player.

Train's fingerprint is its own settings (less the trainer's run-control fields: where and
how often it logs, saves and evaluates), its config file's bytes and the bytes of the
exported files it reads, and nothing upstream: an upstream rerun that exports the same
bytes does not retrain. When it does run, a checkpoint in its output folder made from
other data or another config is removed first (it can be neither resumed nor evaluated),
and one made from the same is resumed; a run resumed at its last step reports the loss
its checkpoint recorded.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FactoryError, require_train_extra

if TYPE_CHECKING:
    from .stages import Context


def split_files(ctx: Context, split: str) -> list[str]:
    """The exported shards of the trainer's format for one split (empty when the split is)."""
    stage, train = ctx.pipeline.export, ctx.pipeline.train
    folder = ctx.export_dir / train.format
    return [str(path) for path in sorted(folder.glob(f"{split}-*.{stage.file_type}"))]


def train_values(ctx: Context) -> dict:
    """The trainer's settings on top of its config file: the pipeline's export as its data, RUN_DIR/train as output."""
    world_model = ctx.pipeline.export.observations == "train"  # the export flagged them: the loss takes them
    return {"data.train": split_files(ctx, "train"), "data.validation": split_files(ctx, "validation"),
            "output_dir": str(ctx.train_dir), **({"data.train_on_observations": True} if world_model else {}),
            **ctx.pipeline.train.overrides}  # fmt: skip


def train_overrides(ctx: Context) -> list[str]:
    """The trainer's `--section.field value` flags."""
    values = train_values(ctx)
    if not values["data.train"]:
        raise FactoryError(
            f"{ctx.export_dir}: the export wrote no train split in {ctx.pipeline.train.format}; nothing to train on"
        )
    flags = []
    for key, value in values.items():
        flags += [f"--{key}", json.dumps(value)]  # JSON is YAML: the trainer parses each value as YAML
    return flags


def train_inputs(ctx: Context) -> list:
    """What the trained weights are a function of: the settings but run control, the config file, the data's bytes."""
    from train.config import RUN_CONTROL_FIELDS  # pydantic only: no torch needed to fingerprint

    stage = ctx.pipeline.train
    settings = stage.model_dump(mode="json")
    settings["overrides"] = {k: v for k, v in settings["overrides"].items() if k not in RUN_CONTROL_FIELDS}
    values = train_values(ctx)
    data = [values.get(key) or [] for key in ("data.train", "data.validation")]
    data = [[path] if isinstance(path, str) else path for path in data]  # the trainer reads one path as a list
    files = [Path(path) for paths in data for path in paths]
    return [settings, Path(stage.config), [path.name for path in files], *files]


def run_train_stage(ctx: Context) -> list[str]:
    require_train_extra("the pipeline's train stage")
    from train.config import load_config
    from train.sft import train

    quiet_hub_bars()
    config = load_config(ctx.pipeline.train.config, train_overrides(ctx))
    removed = remove_stale_checkpoints(config)
    metrics = train(config)
    shown = {key: metrics[key] for key in ("steps", "train_loss", "eval_loss", "trained_tokens") if key in metrics}
    lines = [f"removed {len(removed)} checkpoint(s) made from other data or another config: {', '.join(removed)}"]
    return (lines if removed else []) + [f"trained: {json.dumps(shown)} -> {ctx.train_dir}"]


def remove_stale_checkpoints(config) -> list[str]:
    """Remove the finished checkpoints in output_dir whose config or data hash is not this run's (unless the
    config forces a resume), so training resumes only from its own and eval never plays an older model."""
    from train.checkpoint import foreign_checkpoints
    from train.config import config_hash
    from train.data import data_files_hash

    if config.force_resume:
        return []
    stale = foreign_checkpoints(config.output_dir, config_hash(config), data_files_hash(config.data))
    for checkpoint in stale:
        shutil.rmtree(checkpoint)
    return [checkpoint.name for checkpoint in stale]


def quiet_hub_bars() -> None:
    """No per-file load/save bars from transformers: they would drown the stage's lines (as train.sft does)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def run_eval_stage(ctx: Context) -> list[str]:
    require_train_extra("the pipeline's eval stage")
    from train.checkpoint import last_checkpoint
    from train.evaluate.command import add_eval_parser, run_eval
    from train.evaluate.results import format_results

    quiet_hub_bars()
    checkpoint = last_checkpoint(ctx.train_dir)
    if checkpoint is None:
        raise FactoryError(f"{ctx.train_dir}: no finished checkpoint to evaluate")
    argv = ["eval", str(ctx.run_dir), "--model", str(checkpoint)]
    argv += [flag for path in split_files(ctx, "train") for flag in ("--exclude-train", path)]
    stage = ctx.pipeline.eval
    for flag, value in (("--config", stage.config), ("--max-steps", stage.max_steps), ("--limit", stage.limit)):
        if value is not None:
            argv += [flag, str(value)]
    parser = argparse.ArgumentParser(prog="factory")
    add_eval_parser(parser.add_subparsers(dest="command"))
    results, path = run_eval(parser.parse_args(argv))
    return [*format_results(results).splitlines(), f"results: {path}"]


def eval_inputs(ctx: Context) -> list:
    stage = ctx.pipeline.eval
    return [stage.model_dump(mode="json"), stage.config and Path(stage.config)]
