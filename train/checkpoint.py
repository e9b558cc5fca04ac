"""Checkpoints: Hugging Face weights + accelerate training state + the hashes a resume must match.

    output_dir/checkpoint-<step>/
        model.safetensors, config.json, tokenizer files   (LoRA: adapter_model.safetensors, adapter_config.json)
        state/         optimizer, schedule, RNG states (accelerate.save_state; FSDP: its sharded model too)
        factory_checkpoint.json   step, config_hash, data_hash, train_loss (of that step), config — written last

The weights are saved once, in the format `from_pretrained` reads: accelerate's
own copy of the model is dropped by a save hook and the load hook reads the
Hugging Face files back (FSDP keeps accelerate's sharded copy, which it needs).
A folder without factory_checkpoint.json is a save that did not finish and is
never resumed from. Saving over an existing checkpoint-<step> removes its marker
first; a run resumed at its last step saves nothing (see train.sft Loop.save).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from factory.errors import FactoryError

META_FILE = "factory_checkpoint.json"
CHECKPOINT_NAME = re.compile(r"^checkpoint-(\d+)$")


class CheckpointMismatch(FactoryError):
    """The checkpoint was trained with another config or other data."""


def finished_checkpoints(output_dir: str | Path) -> list[Path]:
    """The checkpoints in output_dir whose completion marker was written, by name."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if CHECKPOINT_NAME.match(p.name) and (p / META_FILE).is_file())


def last_checkpoint(output_dir: str | Path) -> Path | None:
    """The finished checkpoint with the highest step, or None."""
    done = finished_checkpoints(output_dir)
    return max(done, key=lambda p: int(CHECKPOINT_NAME.match(p.name).group(1)), default=None)


def foreign_checkpoints(output_dir: str | Path, config_hash: str, data_hash: str) -> list[Path]:
    """Finished checkpoints made from another config or other data (or whose marker cannot be read):
    neither resumable without force nor the model this config trains."""
    foreign = []
    for checkpoint in finished_checkpoints(output_dir):
        try:
            meta = read_meta(checkpoint)
        except (OSError, ValueError):
            meta = {}
        if meta.get("config_hash") != config_hash or meta.get("data_hash") != data_hash:
            foreign.append(checkpoint)
    return foreign


def read_meta(checkpoint: Path) -> dict[str, Any]:
    return json.loads((checkpoint / META_FILE).read_text(encoding="utf-8"))


def check_resumable(checkpoint: Path, config_hash: str, data_hash: str, force: bool) -> dict[str, Any]:
    meta = read_meta(checkpoint)
    changed = [
        f"{name} {meta.get(name)} -> {now}"
        for name, now in (("config_hash", config_hash), ("data_hash", data_hash))
        if meta.get(name) != now
    ]
    if changed and not force:
        raise CheckpointMismatch(
            f"{checkpoint}: cannot resume, {'; '.join(changed)} (use another output_dir, "
            "--resume false to start over, or --force_resume true)"
        )
    return meta


def register_hooks(accelerator) -> None:
    """Make accelerate's save/load_state skip its copy of the weights: ours are the Hugging Face files."""

    def drop_weights(models, weights, output_dir) -> None:
        weights.clear()

    def load_weights(models, input_dir) -> None:
        for model in models:  # empty under FSDP, whose sharded model accelerate loads itself
            load_hf_weights(accelerator.unwrap_model(model), Path(input_dir).parent)
        models.clear()

    accelerator.register_save_state_pre_hook(drop_weights)
    accelerator.register_load_state_pre_hook(load_weights)


def save_checkpoint(accelerator, model, tokenizer, output_dir: str | Path, step: int, meta: dict) -> Path:
    """Save step `step`; a finished checkpoint-<step> already there (another run's) is unmarked before any write,
    so that a save killed halfway never leaves a folder that looks complete over half-written files."""
    folder = Path(output_dir) / f"checkpoint-{step}"
    if accelerator.is_main_process:
        (folder / META_FILE).unlink(missing_ok=True)
    accelerator.wait_for_everyone()  # no process writes before the old marker is gone
    accelerator.save_state(str(folder / "state"))
    state_dict = accelerator.get_state_dict(model)  # every process: FSDP gathers the shards here
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(folder, state_dict=state_dict)
        tokenizer.save_pretrained(folder)
        text = json.dumps({"step": step, **meta}, indent=2, sort_keys=True)
        (folder / META_FILE).write_text(text, encoding="utf-8")  # last: marks the checkpoint complete
    accelerator.wait_for_everyone()
    return folder


def load_hf_weights(model, checkpoint: Path) -> None:
    """Load saved weights into `model` in place (a PEFT model: its adapter only)."""
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(model, load_file(checkpoint / "adapter_model.safetensors"))
        return
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=next(model.parameters()).dtype)
    model.load_state_dict(saved.state_dict())
