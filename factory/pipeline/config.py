"""The `pipeline:` section of the factory config: which stages `factory run` runs, and their settings.

    pipeline:
      generate: [refine]                 # refine and/or coa, with the config's refine:/coa: sections
      passrate: {policy: {model: qwen3-8b, base_url: "http://gpu:8000/v1"}}   # rollouts for pass_rate filters
      filter: examples/filters.yaml      # null: no filters (every verified row is kept)
      export: {formats: all}             # written to RUN_DIR/export unless `out` says where
      report: true
      publish: {to: outputs/demo-hub}    # or {repo_id: ORG/NAME}; null: not published
      train: {config: examples/train_tiny.yaml}   # its data paths point at this export
      eval: {max_steps: 12}              # the trained checkpoint plays the held-out environments

Relative paths are read from where the command runs, as every other path in the config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..config import StrictModel, read_yaml_mapping
from ..errors import ConfigError
from ..export.observations import TRAINABLE
from ..export.options import ALL_FORMATS, FORMATS, FormatName
from ..export.registry import PAIR_FORMATS
from ..llm.config import LLMConfig
from ..passrate.config import PassrateConfig
from .expand_stage import ExpandStage

# in the order they run
STAGES = ("expand", "refine", "coa", "passrate", "pairs", "filter", "export", "report", "publish", "train", "eval")


class PassrateStage(StrictModel):
    """`factory passrate` inside the pipeline: the config's `passrate:` section says which tasks, how many rollouts."""

    policy: LLMConfig | None = Field(None, description="the policy model to sample (default: the config's llm:)")


class ExportStage(StrictModel):
    out: Path | None = Field(None, description="output folder (default RUN_DIR/export)")
    formats: Literal["all"] | list[FormatName] = Field("all", description="formats to write")
    file_type: Literal["parquet", "jsonl"] = "parquet"
    validation: float | None = Field(
        None, ge=0.0, le=0.5, description="held-out share of task groups (default: the export's 0.05)"
    )
    observations: Literal["mask", "train"] = Field(
        "mask", description="train: observations in the loss too (AutoCoA stage 3); the train stage follows"
    )
    pair_chosen: Literal["corrected", "plan"] = Field(
        "corrected", description="refine pairs: every correction (corrected), or only those on a shortest plan (plan)"
    )

    @field_validator("formats", mode="before")
    @classmethod
    def _known_formats(cls, value: Any) -> Any:
        """One error naming the bad name and the choices, not one per branch of the union."""
        names = [value] if isinstance(value, str) and value != "all" else value
        if isinstance(names, list):
            unknown = [name for name in names if name not in FORMATS]
            if unknown:
                raise ValueError(f"unknown format {unknown[0]!r} (formats: {', '.join(FORMATS)}, or all)")
        return names


class PublishStage(StrictModel):
    to: Path | None = Field(None, description="write the Hub layout to this local folder")
    repo_id: str | None = Field(None, description="push to this Hub dataset repo (token from HF_TOKEN)")
    private: bool = False

    @model_validator(mode="after")
    def _one_target(self) -> PublishStage:
        if (self.to is None) == (self.repo_id is None):
            raise ValueError("publish needs exactly one of `to` (a local folder) or `repo_id` (ORG/NAME)")
        return self


class TrainStage(StrictModel):
    config: Path = Field(description="the SFT config YAML (docs/train.md)")
    format: FormatName = Field("sharegpt", description="which exported format the trainer reads")
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="`section.field: value`, as the trainer's --section.field flags"
    )


class EvalStage(StrictModel):
    config: Path | None = Field(None, description="YAML of eval settings (as factory eval --config)")
    max_steps: int | None = Field(None, ge=1, description="player turns per environment")
    limit: int | None = Field(None, ge=1, description="evaluate only the first N held-out environments")


class PipelineConfig(StrictModel):
    expand: ExpandStage | None = Field(None, description="synthesize multi-hop QA tasks first (docs/synthesis.md)")
    generate: list[Literal["refine", "coa"]] = Field(
        default_factory=lambda: ["refine"], description="generation paths, in this order"
    )
    passrate: PassrateStage | None = Field(
        None, description="sample rollouts for pass_rate filters before filtering (filters never sample)"
    )
    pairs: bool = Field(False, description="when-to-act pairs from the coa trajectories (factory pairs, pairs:)")
    filter: Path | None = Field(None, description="filter YAML (docs/filters.md); null: keep every verified row")
    export: ExportStage | None = Field(default_factory=ExportStage)
    report: bool = True
    publish: PublishStage | None = None
    train: TrainStage | None = None
    eval: EvalStage | None = Field(None, description="needs train: the trained checkpoint is the player")

    @model_validator(mode="after")
    def _needs(self) -> PipelineConfig:
        if self.export is None and (self.publish or self.train):
            raise ValueError("publish and train read the export: keep the export stage")
        if self.eval is not None and self.train is None:
            raise ValueError("eval plays the trained checkpoint: add a train stage (or run factory eval yourself)")
        if self.pairs and "coa" not in self.generate:
            raise ValueError("pairs are made from coa trajectories: generate must include coa")
        if self.eval is not None and "refine" not in self.generate:
            raise ValueError("eval plays refine environments: generate must include refine")
        return self

    @model_validator(mode="after")
    def _train_reads_what_it_trains_on(self) -> PipelineConfig:
        """The SFT trainer reads SFT rows, and a world model needs rows whose observations can train."""
        if self.train is None:
            return self
        if self.train.format in PAIR_FORMATS:
            raise ValueError(
                f"train.format {self.train.format} holds preference pairs: the SFT trainer reads "
                f"an SFT format (a DPO/KTO trainer reads {', '.join(PAIR_FORMATS)}: docs/preference.md)"
            )
        if self.export.observations == "train" and self.train.format not in TRAINABLE:
            raise ValueError(
                f"export.observations train: train.format {self.train.format} cannot train "
                f"observations; use one of {', '.join(TRAINABLE)}"
            )
        return self

    def formats(self) -> list[str]:
        if self.export is None:
            return []
        chosen = list(ALL_FORMATS) if self.export.formats == "all" else list(self.export.formats)
        if self.train is not None and self.train.format not in chosen:
            chosen.append(self.train.format)  # the trainer reads it, so it is written
        return chosen


def check_inputs(pipeline: PipelineConfig, passrate: PassrateConfig) -> None:
    """Raise ConfigError when a file the stages read is missing or does not parse, before any stage runs."""
    from ..filters.config import load_filter_config

    if pipeline.passrate is not None:
        check_passrate_tasks(passrate.tasks)
    named = [
        ("pipeline.filter", pipeline.filter),
        ("pipeline.train.config", pipeline.train and pipeline.train.config),
        ("pipeline.eval.config", pipeline.eval and pipeline.eval.config),
    ]
    for field, path in named:
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{field}: no such file: {path}")
    if pipeline.filter is not None:
        load_filter_config(pipeline.filter)
    if pipeline.train is not None:
        read_yaml_mapping(Path(pipeline.train.config))  # its fields are the trainer's to check


def check_passrate_tasks(tasks: str | None) -> None:
    """The passrate stage samples the config's passrate.tasks: a task file or a saved dataset folder."""
    if tasks is None:
        raise ConfigError("pipeline.passrate: name the tasks to sample in the config's passrate.tasks")
    if not Path(tasks).exists():
        raise ConfigError(f"passrate.tasks: no such task file or dataset folder: {tasks}")
