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

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..cli_options import with_overrides
from ..config import load_yaml_config
from ..errors import FactoryError
from ..plugins import trainer

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
    stage = ctx.pipeline.train
    settings = stage.model_dump(mode="json")
    run_control = trainer("the pipeline's train stage").RUN_CONTROL_FIELDS
    settings["overrides"] = {k: v for k, v in settings["overrides"].items() if k not in run_control}
    values = train_values(ctx)
    data = [values.get(key) or [] for key in ("data.train", "data.validation")]
    data = [[path] if isinstance(path, str) else path for path in data]  # the trainer reads one path as a list
    files = [Path(path) for paths in data for path in paths]
    return [settings, Path(stage.config), [path.name for path in files], *files]


def run_train_stage(ctx: Context) -> list[str]:
    return trainer("the pipeline's train stage").train_stage(ctx.pipeline.train.config, train_overrides(ctx))


def run_eval_stage(ctx: Context) -> list[str]:
    """The newest checkpoint of the train stage plays the run's scripts it was not trained on."""
    from transformers.utils import logging as hf_logging

    from ..evaluate.command import EvalSettings, PlayerChoice, evaluate_run
    from ..evaluate.results import format_results

    checkpoint = trainer("the pipeline's eval stage").last_checkpoint(ctx.train_dir)
    if checkpoint is None:
        raise FactoryError(f"{ctx.train_dir}: no finished checkpoint to evaluate")
    hf_logging.disable_progress_bar()  # per-file load bars would drown the stage's lines
    stage = ctx.pipeline.eval
    base = load_yaml_config(EvalSettings, stage.config) if stage.config else EvalSettings()
    asked = {"max_steps": stage.max_steps, "limit": stage.limit}
    settings = with_overrides(base, {key: value for key, value in asked.items() if value is not None}, "pipeline eval")
    choice = PlayerChoice(model=str(checkpoint))
    results, path = evaluate_run(ctx.run_dir, choice, settings, exclude_train=split_files(ctx, "train"))
    return [*format_results(results).splitlines(), f"results: {path}"]


def eval_inputs(ctx: Context) -> list:
    stage = ctx.pipeline.eval
    return [stage.model_dump(mode="json"), stage.config and Path(stage.config)]
