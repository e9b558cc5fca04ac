"""The preference trainers' own data code, for the consumer tests, and what factory.mask.render says each side trains.

TRL's DPOTrainer and KTOTrainer prepare a dataset as they do before training (their tokenization of the
conversational prompt and sides, then their collator's completion mask); LLaMA-Factory's DPO/RM data path
(dataset_info.json -> loader -> ranking sharegpt converter -> pairwise processor) is run as
consumer_harness runs its supervised one, with stage "rm".
"""

from __future__ import annotations

from pathlib import Path

import trl
from consumer_harness import llamafactory_samples

from factory.export.preference_consumers import dpo_config, kto_config
from factory.mask.render import IGNORE, render
from factory.mask.tiny import tiny_model


def rendered_side(prompt: list[dict], side: dict, tokenizer, sharegpt: bool = False) -> tuple[list[int], list[int]]:
    """factory.mask.render of prompt + one assistant side, only that side in the loss: (input_ids, trained positions).

    Both trainers put what the template writes after the side's end-of-turn marker (ChatML's newline) in the
    completion, so render draws it with `train_turn_suffix`."""
    if sharegpt:
        turns = [{**turn, "loss": False} for turn in prompt] + [{**side, "loss": True}]
        row = {"conversations": turns}
    else:
        turns = [{**m, "weight": 0} if m["role"] == "assistant" else dict(m) for m in prompt]
        row = {"messages": turns + [{**side, "weight": 1}]}
    rendered = render(row, tokenizer, train_turn_suffix=True)
    return rendered.input_ids, [i for i, label in enumerate(rendered.labels) if label != IGNORE]


def trained_positions(mask) -> list[int]:
    return [i for i, value in enumerate(mask) if value]


def collated(trainer, rows: list[dict], columns: tuple[str, ...]) -> dict:
    """The trainer's collator over prepared rows: input_ids and completion_mask per sequence, padding cut."""
    batch = trainer.data_collator([{c: row[c] for c in columns} for row in rows])
    out = []
    for ids, attention, mask in zip(batch["input_ids"], batch["attention_mask"], batch["completion_mask"]):
        length = int(attention.sum())
        out.append((ids[:length].tolist(), trained_positions(mask[:length].tolist())))
    return out


def dpo_prepared(dataset, tokenizer, tmp_path: Path):
    """DPOTrainer's own preparation of the `preference` rows with the card's DPOConfig values, and the
    trainer (for its collator)."""
    tokenizer.pad_token = tokenizer.eos_token
    args = trl.DPOConfig(output_dir=str(tmp_path / "dpo"), report_to=[], use_cpu=True, bf16=False, **dpo_config())
    trainer = trl.DPOTrainer(model=tiny_model(tokenizer), ref_model=tiny_model(tokenizer), args=args,
                             train_dataset=dataset, processing_class=tokenizer)  # fmt: skip
    return trainer, list(trainer.train_dataset)


def dpo_loss(dataset, tokenizer, tmp_path: Path, **settings) -> float:
    """DPOTrainer's loss over all rows in one batch with the card's DPOConfig values and `settings` on top. The
    policy is the reference model nudged by fixed noise: with equal weights every log-ratio is 0, and any
    weighting of them gives the same loss."""
    import torch

    tokenizer.pad_token = tokenizer.eos_token
    policy, reference = tiny_model(tokenizer), tiny_model(tokenizer)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for weights in policy.parameters():
            weights.add_(0.02 * torch.randn(weights.shape, generator=generator))
    args = trl.DPOConfig(output_dir=str(tmp_path / "dpo"), report_to=[], use_cpu=True, bf16=False,
                         **{**dpo_config(), **settings})  # fmt: skip
    trainer = trl.DPOTrainer(model=policy, ref_model=reference, args=args, train_dataset=dataset,
                             processing_class=tokenizer)  # fmt: skip
    batch = trainer.data_collator(list(trainer.train_dataset))
    with torch.no_grad():
        return float(trainer.compute_loss(trainer.model, batch))


def kto_prepared(dataset, tokenizer, tmp_path: Path):
    """KTOTrainer's own preparation of the `kto` rows with the card's KTOConfig values, and the trainer."""
    tokenizer.pad_token = tokenizer.eos_token
    args = trl.KTOConfig(output_dir=str(tmp_path / "kto"), report_to=[], use_cpu=True, bf16=False, **kto_config())
    trainer = trl.KTOTrainer(model=tiny_model(tokenizer), ref_model=tiny_model(tokenizer), args=args,
                             train_dataset=dataset, processing_class=tokenizer)  # fmt: skip
    return trainer, list(trainer.train_dataset)


def llamafactory_pairs(monkeypatch, tmp_path: Path, tokenizer, **config) -> list[dict]:
    """LLaMA-Factory's DPO data path over a `ranking` export: one sample per pair, with chosen_/rejected_
    input_ids and labels exactly as its pairwise processor makes them."""
    return llamafactory_samples(monkeypatch, tmp_path, tokenizer, "rm", **config)
