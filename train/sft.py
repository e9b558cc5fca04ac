"""Supervised fine-tuning on exported trajectories; which tokens train comes from factory.mask.render only.

    python -m train.sft --config examples/train_tiny.yaml --data.train export.jsonl
    accelerate launch --num_processes 8 -m train.sft --config cfg.yaml          # DDP, one process per GPU
    accelerate launch --config_file fsdp.yaml -m train.sft --config cfg.yaml    # FSDP (docs/train.md)

Top to bottom: config -> accelerator -> tokenizer, model (+ LoRA) -> render and
pack the data -> AdamW + warmup/decay schedule -> resume from the last
checkpoint -> steps (accumulate, clip, step, log, evaluate, save) -> final
evaluation on held-out rows -> output_dir/metrics.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.nn.functional as F

from factory.errors import FactoryError
from factory.mask.render import IGNORE
from train.checkpoint import check_resumable, last_checkpoint, register_hooks, save_checkpoint
from train.config import SFTConfig, config_hash, load_config, override_flags
from train.data import Example, TrainingData, load_training_data
from train.modeling import build_model, load_tokenizer, resolve_attention, resolve_bf16
from train.packing import Batch, collate, pack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="train.sft",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="any config field can be overridden on the command line, e.g. --optim.learning_rate 1e-5:\n  "
        + "\n  ".join(override_flags()),
    )
    parser.add_argument("--config", required=True, help="SFT config YAML (docs/train.md)")
    args, overrides = parser.parse_known_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-file load/save bars would drown the step lines
    try:
        train(load_config(args.config, overrides))
    except FactoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: run the same command again to resume from the last checkpoint", file=sys.stderr)
        return 130
    return 0


def train(config: SFTConfig) -> dict:
    """Train as `config` says; returns the metrics also written to output_dir/metrics.json."""
    return fit(config)[0]


def fit(config: SFTConfig) -> tuple[dict, torch.nn.Module]:
    """`train`, also returning the trained model (unwrapped from DDP/FSDP)."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    bf16 = resolve_bf16(config.bf16)
    # cpu=True without CUDA: torchrun's processes then join as gloo DDP instead of training as separate copies.
    accelerator = Accelerator(mixed_precision="bf16" if bf16 else "no", cpu=not torch.cuda.is_available())
    register_hooks(accelerator)
    set_seed(config.seed)
    attn = resolve_attention(config.model.attn_implementation)
    tokenizer = load_tokenizer(config.model)
    data = load_training_data(config.data, tokenizer, config.seed)
    model = build_model(config, tokenizer, attn)
    optimizer = make_optimizer(model, config)
    loop = Loop(config, data, accelerator, tokenizer.pad_token_id, attn)
    scheduler = make_scheduler(optimizer, config, loop.total_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)  # stepped by us: prepare() would step it once per process
    metrics = loop.run(model, optimizer, scheduler, tokenizer)
    return metrics, accelerator.unwrap_model(model)


class Loop:
    """The step loop: which micro-batches make a step, the loss, evaluation, checkpoints."""

    def __init__(self, config: SFTConfig, data: TrainingData, accelerator, pad_id: int, attn: str):
        self.config, self.data, self.accelerator, self.pad_id, self.attn = config, data, accelerator, pad_id, attn
        self.hashes = {"config_hash": config_hash(config), "data_hash": data.data_hash}
        self.resumed_from: tuple[int, Path] | None = None  # (step, folder) of the checkpoint loaded, if any
        self.last_loss: float | None = None  # of the last step trained, or the one its checkpoint recorded
        capacity = config.data.max_seq_length
        self.train_seqs = sequences(data.train, capacity, config.data.packing)
        self.eval_seqs = sequences(data.validation, capacity, config.data.packing)
        self.world, self.rank = accelerator.num_processes, accelerator.process_index
        if len(self.train_seqs) < self.world:
            raise FactoryError(f"{len(self.train_seqs)} training sequences for {self.world} processes; add data")
        micro = math.ceil(len(self.train_seqs) // self.world / config.optim.batch_size)
        self.steps_per_epoch = math.ceil(micro / config.optim.grad_accum)
        self.total_steps = config.optim.max_steps or math.ceil(config.optim.epochs * self.steps_per_epoch)

    def run(self, model, optimizer, scheduler, tokenizer) -> dict:
        config, acc = self.config, self.accelerator
        step, history = self.resume(), []
        model.train()
        started, tokens = time.perf_counter(), 0
        while step < self.total_steps:
            loss, step_tokens = self.optimizer_step(model, optimizer, scheduler, step)
            step, tokens, self.last_loss = step + 1, tokens + step_tokens, round(loss, 5)
            if step % config.log_steps == 0 or step == self.total_steps:
                history.append({"step": step, "loss": round(loss, 5), "lr": scheduler.get_last_lr()[0]})
                acc.print(f"step {step}/{self.total_steps} loss {loss:.4f} lr {history[-1]['lr']:.2e}")
            if config.eval_steps and step % config.eval_steps == 0 and step < self.total_steps:
                acc.print(f"step {step} eval loss {self.evaluate(model)}")
            if config.save_steps and step % config.save_steps == 0 and step < self.total_steps:
                self.save(model, tokenizer, step)
        seconds = time.perf_counter() - started
        eval_loss = self.evaluate(model)
        checkpoint = self.save(model, tokenizer, step)
        return self.report(step, history, eval_loss, checkpoint, tokens, seconds)

    def resume(self) -> int:
        checkpoint = last_checkpoint(self.config.output_dir) if self.config.resume else None
        if checkpoint is None:
            return 0
        meta = check_resumable(checkpoint, **self.hashes, force=self.config.force_resume)
        self.accelerator.load_state(str(checkpoint / "state"))
        self.accelerator.print(f"resumed from {checkpoint} at step {meta['step']}")
        self.resumed_from = (int(meta["step"]), checkpoint)
        self.last_loss = meta.get("train_loss")  # none in a checkpoint saved before it was recorded
        return int(meta["step"])

    def optimizer_step(self, model, optimizer, scheduler, step: int, window=None) -> tuple[float, int]:
        """Step number `step` (0-based): gradients, clipping, update; returns its loss and token count.

        `window`: the step's micro-batches when the caller built them already (a benchmark timing the step alone).
        """
        loss, tokens = self.train_step(model, self.window(step) if window is None else window)
        if self.config.optim.max_grad_norm:
            self.accelerator.clip_grad_norm_(model.parameters(), self.config.optim.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        return loss, tokens

    def window(self, step: int) -> list[Batch]:
        """The micro-batches of optimizer step `step` on this process (the order is a function of seed and epoch)."""
        epoch, index = divmod(step, self.steps_per_epoch)
        generator = torch.Generator().manual_seed(self.config.seed * 100_003 + epoch)
        order = torch.randperm(len(self.train_seqs), generator=generator).tolist()
        mine = order[self.rank :: self.world][: len(order) // self.world]  # equal counts: no process waits
        size, accum = self.config.optim.batch_size, self.config.optim.grad_accum
        micro = [mine[i : i + size] for i in range(0, len(mine), size)][index * accum : (index + 1) * accum]
        return [self.batch([self.train_seqs[i] for i in ids]) for ids in micro]

    def batch(self, seqs: list[list[Example]]) -> Batch:
        rows = [[(e.input_ids, e.labels, e.weight) for e in seq] for seq in seqs]
        return collate(rows, self.pad_id, self.attn).to(self.accelerator.device)

    def train_step(self, model, window: list[Batch]) -> tuple[float, int]:
        """One optimizer step's gradients; returns the step's loss and its (unpadded) token count.

        The loss is the (row-weighted) mean over every trained token of the step,
        across micro-batches and processes: each micro-batch's *sum* is divided by
        the step's total token weight (all-reduced). So a token weighs the same
        whether its trajectory was packed with four others or ran alone; a mean per
        sequence or per micro-batch would weight tokens by how packing happened to
        group them (a sparse micro-batch's tokens would count more). DDP/FSDP
        average gradients over processes, hence the factor num_processes.
        """
        acc = self.accelerator
        local_weight = sum(b.token_weights.sum() for b in window)
        total_weight = acc.reduce(local_weight.detach().clone(), reduction="sum").clamp(min=1e-8)
        scale = acc.num_processes / total_weight
        loss_sum = torch.zeros((), device=acc.device)
        for i, batch in enumerate(window):
            last = i == len(window) - 1
            with nullcontext() if last else acc.no_sync(model):
                batch_sum = (token_losses(model, batch) * batch.token_weights).sum()
                acc.backward(batch_sum * scale)
            loss_sum += batch_sum.detach()
        tokens = sum(b.real_tokens for b in window)
        return float(acc.reduce(loss_sum, reduction="sum") / total_weight), tokens

    @torch.no_grad()
    def evaluate(self, model) -> float | None:
        """Mean loss per trained token over the held-out rows (row weights not applied)."""
        if not self.eval_seqs:
            return None
        model.eval()
        mine = self.eval_seqs[self.rank :: self.world]
        rounds = math.ceil(len(self.eval_seqs) / self.world)  # equal forward counts on every process
        size = self.config.optim.batch_size
        total, count = torch.zeros((), device=self.accelerator.device), torch.zeros((), device=self.accelerator.device)
        for start in range(0, rounds, size):
            seqs = mine[start : start + size]
            batch = self.batch(seqs or self.eval_seqs[:1])
            losses = token_losses(model, batch)
            if seqs:
                total += losses.sum()
                count += (batch.targets != IGNORE).sum()
        model.train()
        total, count = self.accelerator.reduce(total, "sum"), self.accelerator.reduce(count, "sum")
        return round(float(total / count), 5) if count else None

    def save(self, model, tokenizer, step: int) -> Path:
        if self.resumed_from is not None and self.resumed_from[0] == step:
            # Nothing trained since the load (a finished run run again): the checkpoint already holds this
            # state, and re-saving it in place would only open a window where a kill spoils a good checkpoint.
            return self.resumed_from[1]
        meta = {**self.hashes, "train_loss": self.last_loss, "config": self.config.model_dump(mode="json")}
        return save_checkpoint(self.accelerator, model, tokenizer, self.config.output_dir, step, meta)

    def report(self, step, history, eval_loss, checkpoint, tokens, seconds) -> dict:
        metrics = {
            "steps": step, "train_loss": history[-1]["loss"] if history else self.last_loss, "eval_loss": eval_loss,
            "history": history, "checkpoint": str(checkpoint), "train_sequences": len(self.train_seqs),
            "train_rows": len(self.data.train), "validation_rows": len(self.data.validation),
            "skipped_rows": dict(self.data.skipped), "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
            "no_validation": self.data.no_validation,
            **self.hashes,
        }  # fmt: skip
        if self.accelerator.is_main_process:
            Path(self.config.output_dir, "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        why = f" ({self.data.no_validation})" if eval_loss is None and self.data.no_validation else ""
        loss = metrics["train_loss"]  # None only when resumed at the last step from an older checkpoint
        loss = "unknown (resumed at the last step; its checkpoint records no loss)" if loss is None else loss
        self.accelerator.print(f"done: {step} steps, train loss {loss}, eval loss {eval_loss}{why}")
        self.accelerator.print(f"weights: {checkpoint}")
        return metrics


def token_losses(model, batch: Batch) -> torch.Tensor:
    """Cross-entropy per position ([B, L], 0 where there is no target); targets are pre-shifted by packing."""
    logits = model(**batch.model_inputs()).logits
    flat = F.cross_entropy(logits.float().flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE, reduction="none")
    return flat.view(batch.targets.shape)


def sequences(examples: list[Example], capacity: int, packing: bool) -> list[list[Example]]:
    if not packing:
        return [[e] for e in examples]
    return [[examples[i] for i in bin_] for bin_ in pack([len(e) for e in examples], capacity)]


def make_optimizer(model, config: SFTConfig) -> torch.optim.Optimizer:
    trainable = [p for p in model.parameters() if p.requires_grad]
    groups = [  # no weight decay on norms and biases (1-D parameters)
        {"params": [p for p in trainable if p.ndim >= 2], "weight_decay": config.optim.weight_decay},
        {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.optim.learning_rate)


def make_scheduler(optimizer, config: SFTConfig, total_steps: int):
    from transformers import get_scheduler

    name = {"cosine": "cosine", "linear": "linear", "constant": "constant_with_warmup"}[config.optim.schedule]
    return get_scheduler(name, optimizer, num_warmup_steps=config.optim.warmup_steps, num_training_steps=total_steps)


if __name__ == "__main__":
    sys.exit(main())
