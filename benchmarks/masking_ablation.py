"""Masked refinement SFT, controlled: masked / trained / removed mistakes, scored on held-out decisions.

    python benchmarks/masking_ablation.py                 # CUDA: 3 variants x 2 seeds, a ~10M model, 600 steps
    python benchmarks/masking_ablation.py --tiny          # CPU dry run (automatic without CUDA): small and short

No pretrained weights exist on the lent GPU (benchmarks/refinement_ablation.py
needs a base model that can already play; the embedded SmolLM2-135M GGUF is
98 MB, over the 64 MiB a device call can carry), so this one asks the question
AgentRefine's ablation asks in a world small enough to learn from scratch. An
errand world (fetch an item from the room it is in, carry it to a target room,
put it down) makes AgentRefine-shaped sharegpt rows; in 60% of them the agent
makes one slip agents make (goes to the target room first, takes the item
where it is not, puts it down in the wrong room), the world refuses it and
says why, and the agent corrects itself. The same rows train a random-init
Qwen2 (train.sft, the tiny tokenizer) three ways (ablation_data.variant):
`masked` (ours: the slip in context, out of the loss), `trained` (the slip
trained too), `removed` (the slip and its refusal dropped). Held-out rows
(other seeds) are then scored by the log-probability of every legal action
string under the model (factory.mask.render labels, so exactly what training
scored):

- clean: at each decision of a slip-free row, greedy accuracy and the
  probability mass on the right action (accuracy when sampling at T=1);
- recovery: right after a slip and the world's refusal, the same two;
- slip mass: at decisions where a slip was possible, the probability of it.

Results go to benchmarks/results/masking_ablation.json under a key naming
the device and settings.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ablation_data import variant  # noqa: E402
from results_file import report  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "masking_ablation.json"
ROOMS = ["kitchen", "hall", "garden", "cellar", "attic", "study", "pantry", "porch"]
ITEMS = ["key", "lamp", "book", "cup", "map", "coin", "knife", "rope"]
SLIP_RATE = 0.6


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="CPU dry run: small model, few steps and rows")
    parser.add_argument("--seeds", type=int, default=None, help="training seeds per variant (default 2; tiny 1)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps (default 600; tiny 20)")
    parser.add_argument("--rows", type=int, default=None, help="training rows (default 6000; tiny 300)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.tiny = args.tiny or not torch.cuda.is_available()
    args.seeds = args.seeds or (1 if args.tiny else 2)
    args.steps = args.steps or (20 if args.tiny else 600)
    args.rows = args.rows or (300 if args.tiny else 6000)
    args.hidden, args.layers = (64, 2) if args.tiny else (256, 6)
    args.batch = 4 if args.tiny else 16
    return args


def errand(rng: random.Random) -> dict:
    item = rng.choice(ITEMS)
    start, source, target = rng.sample(ROOMS, 3)
    return {"item": item, "start": start, "source": source, "target": target}


def right_actions(task: dict) -> list[tuple[str, str]]:
    """(action, observation) pairs of the slip-free errand."""
    item, source, target = task["item"], task["source"], task["target"]
    return [
        (f"go to {source}", f"You are in the {source}. The {item} is on the floor."),
        (f"take {item}", f"You pick up the {item}."),
        (f"go to {target}", f"You are in the {target}."),
        (f"put {item} in {target}", f"You put the {item} down in the {target}. The errand is done."),
    ]


def slip_choices(task: dict, step: int) -> list[tuple[str, str]]:
    """The mistakes an agent makes instead of the right action at `step`, each with the world's refusal."""
    item, source, target, start = task["item"], task["source"], task["target"], task["start"]
    others = [r for r in ROOMS if r != target]
    if step == 0:  # heads for the target first, or takes the item before fetching it
        return [(f"go to {target}", f"You are in the {target}. There is no {item} here; it is in the {source}."),
                (f"take {item}", f"There is no {item} in the {start}; it is in the {source}.")]  # fmt: skip
    if step == 1:  # takes another item than the errand's
        return [(f"take {other}", f"There is no {other} here. The {item} is on the floor.")
                for other in ITEMS if other != item]  # fmt: skip
    if step == 2:  # finishes before carrying the item to the target
        return [(f"put {item} in {target}", f"You are in the {source}, not the {target}.")]
    return [(f"put {item} in {r}", f"You are in the {target}, not the {r}.") for r in others]


def errand_row(task: dict, slip_step: int | None, rng: random.Random, row_id: str) -> dict:
    opening = (
        f"You are in the {task['start']}. Errand: bring the {task['item']} from the {task['source']} to the "
        f"{task['target']}. Actions: go to ROOM, take ITEM, put ITEM in ROOM. Answer with one action."
    )
    turns = [{"from": "human", "value": opening}]
    for step, (action, observation) in enumerate(right_actions(task)):
        if step == slip_step:
            slip, refusal = rng.choice(slip_choices(task, step))
            turns += [{"from": "gpt", "value": slip, "loss": False}, {"from": "human", "value": refusal}]
        turns += [{"from": "gpt", "value": action, "loss": True}, {"from": "human", "value": observation}]
    return {"id": row_id, "task_id": row_id, "conversations": turns[:-1]}


def corpus(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        errand_row(errand(rng), rng.randrange(4) if rng.random() < SLIP_RATE else None, rng, f"s{seed}-{i}")
        for i in range(count)
    ]


def legal_actions(task: dict) -> list[str]:
    item = task["item"]
    return [f"go to {r}" for r in ROOMS] + [f"take {i}" for i in ITEMS] + [f"put {item} in {r}" for r in ROOMS]


class Decision:
    """One held-out choice: every legal action rendered after the same prefix, which is right, which are slips."""

    def __init__(self, tokenizer, prefix: list[dict], task: dict, right: str, slips: list[str]):
        self.candidates = legal_actions(task)
        self.right, self.slips = self.candidates.index(right), [self.candidates.index(s) for s in slips]
        self.rows = [candidate_tokens(tokenizer, prefix, c) for c in self.candidates]


def candidate_tokens(tokenizer, prefix: list[dict], action: str) -> tuple[list[int], list[int]]:
    """factory.mask.render's ids and labels for the prefix then `action` as the one trained turn."""
    from factory.mask.render import render

    history = [{**t, "loss": False} if t["from"] == "gpt" else t for t in prefix]
    rendered = render({"conversations": [*history, {"from": "gpt", "value": action, "loss": True}]}, tokenizer)
    return rendered.input_ids, rendered.labels


def decisions(tokenizer, rows: list[dict], tasks: list[dict]) -> dict[str, list[Decision]]:
    """Clean decisions (no slip just before: the slips possible there are scored) and recoveries (right after one)."""
    found: dict[str, list[Decision]] = {"clean": [], "recovery": []}
    for row, task in zip(rows, tasks):
        turns = row["conversations"]
        for k, turn in enumerate(turns):
            if turn["from"] != "gpt" or not turn["loss"]:
                continue
            after_slip = k >= 2 and turns[k - 2]["from"] == "gpt" and not turns[k - 2]["loss"]
            step = sum(1 for t in turns[:k] if t["from"] == "gpt" and t["loss"])
            slips = [] if after_slip else [action for action, _ in slip_choices(task, step)]
            kind = "recovery" if after_slip else "clean"
            found[kind].append(Decision(tokenizer, turns[:k], task, turn["value"], slips))
    return found


def action_logprobs(model, pad_id: int, rows: list[tuple[list[int], list[int]]]) -> torch.Tensor:
    """Summed log-probability of each row's labelled tokens (the candidate action and its end marker)."""
    device = next(model.parameters()).device
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (row_ids, row_labels) in enumerate(rows):
        ids[i, : len(row_ids)], labels[i, : len(row_labels)] = torch.tensor(row_ids), torch.tensor(row_labels)
        mask[i, : len(row_ids)] = 1
    ids, labels, mask = ids.to(device), labels.to(device), mask.to(device)
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        logits = model(input_ids=ids, attention_mask=mask).logits
    logp = torch.log_softmax(logits[:, :-1].float(), -1)
    targets = labels[:, 1:]
    picked = logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (picked * (targets != -100)).sum(-1).cpu()


def evaluate(model, pad_id: int, found: dict[str, list[Decision]]) -> dict:
    """Greedy accuracy, right-action mass and slip mass over the legal actions, per decision kind."""
    model.eval()
    figures = {}
    for kind, items in found.items():
        greedy, right, slip = [], [], []
        for decision in items:
            probs = torch.softmax(action_logprobs(model, pad_id, decision.rows), 0)
            greedy.append(int(probs.argmax()) == decision.right)
            right.append(float(probs[decision.right]))
            if decision.slips:
                slip.append(float(probs[decision.slips].sum()))
        figures[kind] = {"decisions": len(items), "greedy_accuracy": mean(greedy), "right_mass": mean(right)}
        if slip:
            figures[kind]["slip_mass"] = mean(slip)
    return figures


def mean(values: list) -> float:
    return round(sum(values) / len(values), 4)


def train_variant(rows: list[dict], kind: str, seed: int, args, work: Path):
    from train.config import SFTConfig
    from train.sft import fit

    data = work / f"{kind}.jsonl"
    data.write_text("".join(json.dumps(variant(r, kind)) + "\n" for r in rows), encoding="utf-8")
    config = SFTConfig.model_validate({
        "model": {"path": "tiny:qwen2", "tiny_hidden": args.hidden, "tiny_layers": args.layers,
                  "attn_implementation": "sdpa"},
        "data": {"train": [str(data)], "validation": [], "validation_fraction": 0.0, "max_seq_length": 1024},
        "optim": {"learning_rate": 1e-3, "schedule": "cosine", "warmup_steps": max(2, args.steps // 20),
                  "batch_size": args.batch, "max_steps": args.steps},
        "output_dir": str(work / f"{kind}-{seed}"), "seed": seed, "save_steps": 0, "eval_steps": 0,
        "log_steps": max(1, args.steps // 5), "resume": False,
    })  # fmt: skip
    metrics, model = fit(config)
    return metrics, model


def heldout(tokenizer, tiny: bool) -> dict[str, list[Decision]]:
    """Held-out errands (their own seed): half slip-free, half with one slip, as decisions."""
    rng = random.Random(10_000)
    tasks = [errand(rng) for _ in range(30 if tiny else 160)]
    rows = [errand_row(t, rng.randrange(4) if i % 2 else None, rng, f"h{i}") for i, t in enumerate(tasks)]
    return decisions(tokenizer, rows, tasks)


def main() -> None:
    from factory.mask.tiny import tiny_tokenizer

    args = parse_args()
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    tokenizer = tiny_tokenizer()
    found = heldout(tokenizer, args.tiny)
    rows, started, runs = corpus(args.rows, seed=0), time.perf_counter(), {}
    with tempfile.TemporaryDirectory() as scratch:
        for kind in ("masked", "trained", "removed"):
            for seed in range(args.seeds):
                metrics, model = train_variant(rows, kind, seed, args, Path(scratch))
                figures = evaluate(model, tokenizer.pad_token_id, found)
                runs[f"{kind} seed={seed}"] = {"train_loss": metrics["train_loss"], **figures}
                print(kind, seed, json.dumps(figures), flush=True)
                del model
    params = f"hidden {args.hidden} x{args.layers} layers"
    key = f"{device} | {args.rows} rows, {args.steps} steps, batch {args.batch}, {params}"
    mode = "CPU dry run (not a measurement)" if args.tiny else "GPU"
    report(args.output, key, {"mode": mode, "slip_rate": SLIP_RATE, "runs": runs,
                              "mean": means(runs), "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip


def means(runs: dict) -> dict:
    """Per variant, the mean over seeds of each figure."""
    out: dict = {}
    for name, figures in runs.items():
        kind = name.split()[0]
        for part, values in figures.items():
            if isinstance(values, dict):
                for figure, value in values.items():
                    if figure != "decisions":
                        out.setdefault(kind, {}).setdefault(f"{part}.{figure}", []).append(value)
    return {k: {f: round(sum(v) / len(v), 4) for f, v in fs.items()} for k, fs in out.items()}


if __name__ == "__main__":
    main()
