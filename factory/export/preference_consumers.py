"""What the preference trainers read beside the rows: LLaMA-Factory's dataset_info.json for `ranking`, and
the dataset card's snippets for the three formats (registry.py names them).

tests/test_consumer_preference.py runs TRL's DPO / KTO data preparation and LLaMA-Factory's pairwise
processor with exactly these settings. AutoCoA's stage 1 ("when to act") trains the pairs with a
preference loss plus an auxiliary SFT term on the chosen side: `pref_ftx` in LLaMA-Factory, the `sft`
loss beside `sigmoid` in TRL; the weights below are a starting point, not AutoCoA's published values.
Each snippet states how long the written sides are (preference_lengths.py) and the length-aware loss
settings its trainer has, since a length gap between the sides is learnt as part of the preference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .llamafactory import DATASET_INFO, SHAREGPT_TAGS
from .snippets import DEFAULT_CUTOFF, trl_data_files

if TYPE_CHECKING:
    from .dataset import FormatFiles

RANKING_COLUMNS = {"messages": "conversations", "chosen": "chosen", "rejected": "rejected"}
RANKING_TAGS = {**SHAREGPT_TAGS, "observation_tag": "observation"}


def write_ranking_info(folder: Path, files: dict[str, list[Path]]) -> dict[str, list[str]]:
    """folder/dataset_info.json, one `ranking: true` entry per shard; returns split -> dataset names."""
    info, names = {}, {}
    for split, paths in files.items():
        for k, path in enumerate(paths):
            name = f"factory_ranking_{split}" if len(paths) == 1 else f"factory_ranking_{split}_{k}"
            info[name] = {"file_name": Path(path).name, "formatting": "sharegpt", "ranking": True,
                          "columns": RANKING_COLUMNS, "tags": RANKING_TAGS}  # fmt: skip
            names.setdefault(split, []).append(name)
    (folder / DATASET_INFO).write_text(json.dumps(info, indent=2) + "\n")
    return names


def ranking_config(settings: dict[str, Any], dataset_dir: str) -> dict[str, Any]:
    """The data and loss keys of a LLaMA-Factory DPO training YAML for the `ranking` export."""
    names = settings.get("datasets", {})
    config = {"stage": "dpo", "dataset_dir": dataset_dir, "dataset": ",".join(names.get("train", [])),
              "template": "qwen", "cutoff_len": settings.get("cutoff_len", DEFAULT_CUTOFF),
              "pref_loss": "sigmoid", "pref_ftx": 1.0}  # fmt: skip
    held = [name for split, split_names in names.items() if split != "train" for name in split_names]
    if held:
        config["eval_dataset"] = ",".join(held)
    return config


def ranking_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    config = yaml.safe_dump(ranking_config(fmt.settings, path), sort_keys=False).strip()
    return (
        f"**LLaMA-Factory DPO** (`ranking`: `ranking: true` sharegpt rows, one `gpt` turn per side; "
        f"{chosen_words(fmt.settings)}; {pair_length(fmt.settings)}; `pref_ftx` adds the SFT term on the chosen "
        f"side, AutoCoA's stage 1 recipe, `pref_ftx: 0` is plain DPO):\n\n```yaml\n{config}\n```"
        f"{side_lengths(fmt.settings, 'ranking')}"
    )


def pair_length(settings: dict[str, Any]) -> str:
    if "longest_chars" not in settings:
        return "keep `cutoff_len` above your longest pair"
    return (
        f"longest prompt + side {settings['longest_chars']} characters: keep `cutoff_len` above it in tokens, "
        "LLaMA-Factory cuts a longer pair"
    )


def chosen_words(settings: dict[str, Any]) -> str:
    if settings.get("pair_chosen") == "plan":
        return (
            "refine pairs choose the correction the trajectory took, kept only where it is a shortest-plan "
            "move of the world (never the plan's own move: the world writes no thought)"
        )
    return "refine pairs choose the correction the trajectory took"


# Length-aware settings of each trainer, alternatives to one another (TRL 1.16's DPOConfig, LLaMA-Factory
# 0.9.5's finetuning arguments; the tests build both trainers' configs from them), with what each does.
# TRL's KTOTrainer has none.
LENGTH_AWARE: dict[str, list[tuple[dict[str, Any], str]]] = {
    "preference": [({"ld_alpha": 0.5}, "LD-DPO: a side's tokens beyond the other's length weigh alpha, 1.0 is DPO"),
                   ({"loss_type": ["sigmoid_norm", "sft"]}, "per-token means; raise beta")],
    "ranking": [({"ld_alpha": 0.5}, "LD-DPO: a side's tokens beyond the other's length weigh alpha, 1.0 is DPO"),
                ({"pref_loss": "simpo"}, "per-token means, no reference model; raise pref_beta")],
}  # fmt: skip


def side_lengths(settings: dict[str, Any], name: str) -> str:
    """A paragraph after the snippet: the written sides' mean words and the share of pairs whose chosen side
    is shorter, with what to do about it ("" when no pair has both sides)."""
    figures = settings.get("side_words") or {}
    if not figures.get("pairs"):
        return ""
    chosen, rejected = ("desirable", "undesirable") if name == "kto" else ("chosen", "rejected")
    measured = (
        f"Side lengths: {chosen} sides average {figures['chosen_mean']} words, {rejected} sides "
        f"{figures['rejected_mean']}; the {chosen} side is the shorter in {figures['chosen_shorter']:.0%} of "
        f"{figures['pairs']} pairs."
    )
    return f"\n\n{measured} {length_advice(name)}"


def length_advice(name: str) -> str:
    if name == "kto":
        return (
            "KTOTrainer sums log-probabilities over a completion and has no length-normalised loss (`loss_type` "
            "is `kto` or `apo_zero_unpaired`), so it can learn length along with the label: drop the shortest "
            "desirable rows, or compare the trained model's thought length with the SFT model's."
        )
    yaml_style = name == "ranking"
    options = " or ".join(f"`{setting(values, yaml_style)}` ({what})" for values, what in LENGTH_AWARE[name])
    return (
        f"The preference term sums log-probabilities over a side, so it can learn a length gap as preference (and "
        f"the SFT term imitates the chosen sides as written): set {options}, or drop the pairs with the "
        "shortest chosen sides."
    )


def setting(values: dict[str, Any], yaml_style: bool) -> str:
    return ", ".join(f"{k}: {v}" for k, v in values.items()) if yaml_style else arguments(values)


def dpo_config() -> dict[str, Any]:
    """DPOConfig values the card gives: DPO's loss plus the SFT term, and no length cut (TRL's default 1024
    drops a pair whose prompt fills it and cuts the sides of a longer one, so the trained tokens differ)."""
    return {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 1.0], "max_length": None}


def kto_config() -> dict[str, Any]:
    return {"max_length": None}  # as for DPO: TRL's default 1024 drops or cuts long rows


def preference_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    code = trl_pair_code(fmt.settings, path, file_type, "DPO", dpo_config(), [
        "sigmoid: DPO's loss; sft: the auxiliary SFT term on the chosen side (AutoCoA stage 1); drop it for plain DPO.",
        "max_length=None: TRL's default (1024) drops a pair whose prompt fills it and cuts longer ones",
    ])  # fmt: skip
    return (
        f"**TRL DPO** (`preference`: conversational `prompt` / `chosen` / `rejected`; {chosen_words(fmt.settings)}; "
        f"the metadata columns are ignored):\n\n```python\n{code}\n```{side_lengths(fmt.settings, 'preference')}"
    )


def kto_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    code = trl_pair_code(fmt.settings, path, file_type, "KTO", kto_config(), [
        "max_length=None as for DPO; desirable_weight / undesirable_weight: balance the two labels",
    ])  # fmt: skip
    return (
        "**TRL KTO** (`kto`: unpaired `prompt` / `completion` / `label`, one row per side of each pair, and the "
        f"one-sided rows: mistakes whose correction has no grounded thought, stored KTO-only rows):\n\n"
        f"```python\n{code}\n```{side_lengths(fmt.settings, 'kto')}"
    )


def trl_pair_code(
    settings: dict[str, Any], path: str, file_type: str, trainer: str, config: dict[str, Any], notes: list[str]
) -> str:
    """The card's Python for one TRL preference trainer ("DPO", "KTO"): load the export, configure, train."""
    builder, files = trl_data_files(settings, path, file_type)
    evaluation = ', eval_dataset=data["validation"]' if "validation" in files else ""
    return "\n".join(
        [
            "from datasets import load_dataset",
            f"from trl import {trainer}Config, {trainer}Trainer",
            "",
            f"data = load_dataset({builder!r}, data_files={files!r})",
            *(f"# {note}" for note in notes),
            f'args = {trainer}Config(output_dir="{trainer.lower()}", {arguments(config)})',
            f'{trainer}Trainer(model=MODEL, args=args, train_dataset=data["train"]{evaluation}, '
            "processing_class=TOKENIZER).train()",
        ]
    )


def arguments(values: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in values.items())
