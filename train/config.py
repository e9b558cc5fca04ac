"""SFT config: pydantic sections with extra="forbid", read from YAML, overridable from the command line.

    model:  {path: tiny:qwen2 | /local/hf/dir, tokenizer: ..., attn_implementation: auto}
    data:   {train: [export.parquet], validation: [], validation_fraction: 0.1, max_seq_length: 2048, packing: true}
    lora:   {enabled: false, r: 16, alpha: 32, dropout: 0.05, target_modules: all-linear}
    optim:  {learning_rate: 2e-5, schedule: cosine, warmup_steps: 0, batch_size: 1, grad_accum: 8, max_steps: null}
    output_dir, seed, bf16, gradient_checkpointing, save_steps, eval_steps, resume, force_resume

Overrides are `--section.field value` (the value is read as YAML: `--lora.enabled true`,
`--data.train [a.jsonl,b.jsonl]`). A bad value fails with one line naming the file or
the flag and the field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field as F
from pydantic import ValidationError, field_validator

from factory.cli_options import parse_overrides, set_dotted
from factory.config import StrictModel, describe_validation_error, read_yaml_mapping
from factory.errors import ConfigError

# Fields that steer a run but not what it learns: changing them does not block a resume.
RUN_CONTROL_FIELDS = ("output_dir", "save_steps", "eval_steps", "log_steps", "resume", "force_resume")


class ModelSection(StrictModel):
    path: str = F(description="a local Hugging Face model folder, or tiny:qwen2 / tiny:llama (random, for tests)")
    tokenizer: str | None = F(None, description="tokenizer folder (a fast tokenizer); default: the model's")
    tiny_hidden: int = F(64, gt=0, description="hidden size of a tiny: model")
    tiny_layers: int = F(2, gt=0, description="layers of a tiny: model")
    attn_implementation: Literal["auto", "sdpa", "eager", "flash_attention_2"] = F(
        "auto", description="auto: flash_attention_2 on CUDA when flash-attn is installed, else sdpa"
    )


class DataSection(StrictModel):
    train: list[str] = F(
        min_length=1,
        description="export files (.jsonl/.json/.parquet, a save_to_disk folder or a glob), any export format",
    )
    validation: list[str] = F([], description="held-out files (globs too); when given, validation_fraction is unused")
    validation_fraction: float = F(0.05, ge=0.0, lt=1.0, description="without validation files: this share of "
                                   "train rows held out as whole task groups")  # fmt: skip
    max_seq_length: int = F(
        2048, gt=8, description="tokens per rendered row (whole trailing turns dropped) and per packed sequence"
    )
    packing: bool = F(True, description="several trajectories per sequence, attention kept inside each")
    train_on_observations: bool = F(False, description="AFM <observation> spans train too (factory.mask decides)")
    row_weights: bool = F(True, description="the export's weight column scales each row's tokens in the loss")

    @field_validator("train", "validation", mode="before")
    @classmethod
    def one_path_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class LoraSection(StrictModel):
    enabled: bool = F(False, description="LoRA (peft) instead of full fine-tuning")
    r: int = F(16, gt=0, description="LoRA rank")
    alpha: int = F(32, gt=0, description="LoRA scaling alpha")
    dropout: float = F(0.05, ge=0.0, lt=1.0, description="dropout on the LoRA branch")
    target_modules: list[str] | Literal["all-linear"] = F(
        "all-linear", description="all-linear or a list of module names, e.g. [q_proj, v_proj]"
    )


class OptimSection(StrictModel):
    learning_rate: float = F(2e-5, gt=0, description="peak learning rate (AdamW)")
    weight_decay: float = F(0.0, ge=0, description="AdamW weight decay (never on 1-D parameters)")
    schedule: Literal["cosine", "linear", "constant"] = F("cosine", description="decay after the warmup")
    warmup_steps: int = F(0, ge=0, description="linear warmup from 0")
    batch_size: int = F(1, gt=0, description="sequences (packed or not) per micro-batch per process")
    grad_accum: int = F(1, gt=0, description="micro-batches per optimizer step")
    max_grad_norm: float | None = F(1.0, gt=0, description="gradient clipping norm; null: no clipping")
    max_steps: int | None = F(None, gt=0, description="optimizer steps; wins over epochs when set")
    epochs: float = F(1.0, gt=0, description="passes over the training sequences (fractions allowed)")


class SFTConfig(StrictModel):
    model: ModelSection
    data: DataSection
    lora: LoraSection = LoraSection()
    optim: OptimSection = OptimSection()
    output_dir: str = F(description="checkpoints and metrics.json")
    seed: int = F(0, description="tiny-model init, hold-out choice, data order, dropout")
    bf16: bool | Literal["auto"] = F(
        "auto", description="auto: bf16 where the device supports it; true fails where it does not"
    )
    gradient_checkpointing: bool = F(False, description="recompute activations in the backward pass")
    save_steps: int = F(0, ge=0, description="also save every N steps; 0: only at the end")
    eval_steps: int = F(0, ge=0, description="also evaluate every N steps; 0: only at the end")
    log_steps: int = F(10, gt=0, description="print a line every N steps")
    resume: bool = F(True, description="continue from the last finished checkpoint in output_dir")
    force_resume: bool = F(False, description="resume even when the config or data hash differs")


def config_hash(config: SFTConfig) -> str:
    """Hash of what shapes the trained weights (run-control fields left out)."""
    values = config.model_dump(mode="json", exclude=set(RUN_CONTROL_FIELDS))
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:16]


def load_config(path: str | Path, overrides: list[str] | None = None) -> SFTConfig:
    """Read `path` and apply `--section.field value` overrides; errors name the file or the flag."""
    data = read_yaml_mapping(Path(path))
    flags = parse_overrides(overrides or [])
    for key, value in flags.items():
        set_dotted(data, key, value)
    try:
        return SFTConfig.model_validate(data)
    except ValidationError as exc:
        first = ".".join(str(part) for part in exc.errors()[0]["loc"])
        flag = next((k for k in flags if first == k or first.startswith(k + ".")), None)
        raise ConfigError(describe_validation_error(exc, f"--{flag}" if flag else str(path))) from None


def override_flags(model: type[StrictModel] = SFTConfig, prefix: str = "") -> list[str]:
    """Every `--section.field` override the trainer accepts, with its default (for --help)."""
    flags = []
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, StrictModel):
            flags += override_flags(kind, f"{prefix}{name}.")
            continue
        default = "required" if info.is_required() else f"default {info.default!r}"
        flags.append(
            f"--{prefix}{name} ({default}): {info.description}" if info.description else f"--{prefix}{name} ({default})"
        )
    return flags
