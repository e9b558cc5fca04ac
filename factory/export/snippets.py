"""Per-trainer config snippets that give factory.mask.render's masks, for the dataset card and docs/export.md.

Each snippet is the part of the trainer's config that decides which tokens
train; tests/test_consumer_*.py run the trainer's own data code with exactly
these values (the functions below are what they call).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import yaml

from .observations import world_model_rows

if TYPE_CHECKING:
    from .dataset import ExportResult, FormatFiles

# What each trainer ignores in the other exports: a flag a trainer ignores is not a mask.
IGNORED = {
    "llamafactory": "LLaMA-Factory ignores the sharegpt `loss` key (every gpt turn of a sample trains) and the "
    "`observation_spans` of an alpaca-read `afm` row (observations train): use the `llamafactory` config.",
    "trl": "TRL's SFTTrainer ignores the `weight` of `messages` (it trains every token, or with "
    "`assistant_only_loss` every assistant turn, mistakes included) and the `weight` column: use the `trl` config.",
    "axolotl": "axolotl reads the per-message flag named by `message_field_training` (here `weight`); "
    "without that key it trains every assistant turn, mistakes included. It ignores the row `weight`.",
    "afm": "AFM's LLaMA-Factory fork masks the `<observation>` blocks of `afm` rows itself when run with "
    "`ignore_observation`; stock LLaMA-Factory trains them.",
}


def axolotl_dataset(path: str, hub_config: str | None = None) -> dict[str, Any]:
    """The `datasets:` entry of an axolotl config for the `messages` export (a folder, or a Hub repo's config)."""
    return {
        "path": path,
        **({"name": hub_config} if hub_config else {}),
        "split": "train",
        "type": "chat_template",
        "field_messages": "messages",
        "roles_to_train": ["assistant"],
        "train_on_eos": "turn",
        "message_field_training": "weight",
    }


# AFM's own SFT scripts (train/{code,web}_agent/sft/sft_qwen2.5_7b.sh) run with CUTOFF_LEN=32768; without a
# tokenizer to measure the samples the configs say the same.
DEFAULT_CUTOFF = 32768


def llamafactory_config(settings: dict[str, Any], dataset_dir: str) -> dict[str, Any]:
    """The data keys of a LLaMA-Factory training YAML for the `llamafactory` export."""
    names = settings.get("datasets", {})
    config = {
        "dataset_dir": dataset_dir,
        "dataset": ",".join(names.get("train", [])),
        "template": "qwen",
        "mask_history": settings.get("mode") == "last",
        "train_on_prompt": False,
        "cutoff_len": settings.get("cutoff_len", DEFAULT_CUTOFF),
    }
    held = [name for split, split_names in names.items() if split != "train" for name in split_names]
    if held:
        config["eval_dataset"] = ",".join(held)
    return config


def afm_fork_config(settings: dict[str, Any], dataset_dir: str) -> dict[str, Any]:
    """The data keys AFM's train/*/sft/*.sh give its LLaMA-Factory fork (docs/afm_format.md); with
    `observations: train` (AutoCoA's stage 3) the fork masks nothing in the output, as stock LLaMA-Factory."""
    masked = settings.get("observations") != "train"
    return {
        **{k: v for k, v in llamafactory_config(settings, dataset_dir).items() if k != "mask_history"},
        "ignore_observation": masked,
        **({"ignore_observation_token": "observation"} if masked else {}),
    }


def trl_data_files(settings: dict[str, Any], path: str, file_type: str) -> tuple[str, dict[str, str]]:
    """The `datasets` builder and data_files that load the trl export, per split."""
    extension = "parquet" if file_type == "parquet" else "jsonl"
    builder = "parquet" if file_type == "parquet" else "json"
    return builder, {split: f"{path}/{split}-*.{extension}" for split in settings.get("splits", ["train"])}


def trl_config(settings: dict[str, Any]) -> dict[str, Any]:
    """SFTConfig values the masks depend on: render already cut rows at whole turns (max_length), and TRL
    refuses assistant_only_loss on pre-tokenized rows, whose assistant_masks it applies anyway."""
    return {"max_length": settings.get("max_length")}


def trl_snippet(settings: dict[str, Any], path: str, file_type: str) -> str:
    builder, files = trl_data_files(settings, path, file_type)
    evaluation = ', eval_dataset=data["validation"]' if "validation" in files else ""
    return "\n".join(
        [
            "from datasets import load_dataset",
            "from transformers import AutoTokenizer",
            "from trl import SFTConfig, SFTTrainer",
            "",
            f'tokenizer = AutoTokenizer.from_pretrained("{settings.get("tokenizer")}")  # the one the rows were rendered with',
            f"data = load_dataset({builder!r}, data_files={files!r})",
            f'args = SFTConfig(output_dir="sft", max_length={trl_config(settings)["max_length"]})  # leave assistant_only_loss unset',
            f'SFTTrainer(model=MODEL, args=args, train_dataset=data["train"]{evaluation}, processing_class=tokenizer).train()',
        ]
    )


def length_note(settings: dict[str, Any]) -> str:
    """What the export measured about sample length, for the cutoff_len line of a config."""
    if "longest_tokens" in settings:
        return f"longest sample {settings['longest_tokens']} tokens with `{settings['tokenizer_name']}`"
    if "longest_chars" in settings:
        return (
            f"longest sample {settings['longest_chars']} characters; export with `--tokenizer` to measure "
            "tokens, and keep `cutoff_len` above them (longer samples are cut)"
        )
    return "keep `cutoff_len` above your longest sample"


def consumer_section(result: ExportResult, load_path: str, observed: tuple[int, int] | None = None) -> str:
    """The card's "Training with your trainer" text: one snippet per written format that has a trainer.

    `load_path` is a local folder, or the Hub repo id when publishing: then axolotl reads the repo's config
    itself, and the trainers that read a folder are pointed at a download of the repo. `observed`: how many
    observations train and how many of them are refusals (card.observed), with `--observations train`."""
    hub = load_path != str(result.out)
    parts = [f"Download the repo first for the folder-based trainers: `huggingface-cli download {load_path} "
             "--repo-type dataset --local-dir DATA`, paths below are under it."] if hub else []  # fmt: skip
    parts.append(observations_text(result, observed))
    for fmt in result.formats:
        folder = fmt.folder.as_posix()
        where = f"DATA/{folder}" if hub else f"{load_path}/{folder}"
        fmt = replace(fmt, settings={**fmt.settings, "observations": result.options.observations})
        snippet = _snippet(fmt, where, load_path if hub else None, result.options.file_type)
        if snippet:
            parts.append(snippet)
    notes = "\n".join(f"- {text}" for text in IGNORED.values())
    return "\n\n".join(parts + ["What each trainer ignores:\n\n" + notes])


def observations_text(result: ExportResult, observed: tuple[int, int] | None = None) -> str:
    """Which mask the export used for the observations (export/observations.py), first in the section."""
    if not world_model_rows(result.options.observations, [fmt.name for fmt in result.formats]):
        return (
            "**Observations are masked** (`--observations mask`, AutoCoA's SFT stage 2): tool results and the "
            "DM's lines are context only in every format; `--observations train` writes the world-model rows."
        )
    seen, refusals = observed or (0, 0)
    return (
        "**Observations train** (`--observations train`, AutoCoA's SFT stage 3, a world model): every observation "
        f"that answers an action is in the loss ({seen} in the kept rows), the world's refusal of a mistaken "
        f"action included ({refusals} of them; the mistaken action itself stays out). `messages` and `openai` "
        "rows carry `weight: 1` on those user / tool messages "
        "(axolotl reads it on any role); `trl` rows were rendered with them in `assistant_masks`; `afm` rows train "
        "with `ignore_observation: false`. factory's own trainer: `data.train_on_observations: true` (a flagged "
        "user observation trains through its end-of-turn marker, a tool message its content). LLaMA-Factory never "
        "trains human or observation turns, so `sharegpt` and `llamafactory` are not written."
    )


def _snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str | None:
    """The format's card snippet, as the registry names it (registry.py); None for a format without one."""
    from .registry import format_spec

    return format_spec(fmt.name).card_snippet(fmt, path, repo_id, file_type)


def llamafactory_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    config = yaml.safe_dump(llamafactory_config(fmt.settings, path), sort_keys=False).strip()
    mode = (
        "one sample per trained turn, so `mask_history: true`"
        if fmt.settings.get("mode") == "last"
        else "one sample per row; every gpt turn in it trains"
    )
    if fmt.settings.get("native"):
        mode += (
            "; native tool calls: `function_call` / `observation` turns and a `tools` column, which the "
            "`qwen` template writes exactly as Qwen2.5's own (leaving `template` unset writes a ReAct form)"
        )
    return (
        f"**LLaMA-Factory** (`llamafactory`, {mode}; {length_note(fmt.settings)}; tested with the `qwen` "
        "template and with the template LLaMA-Factory parses from the tokenizer, `template` unset; "
        f"reasoning templates rewrite turns):\n\n```yaml\n{config}\n```"
    )


def afm_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    config = yaml.safe_dump(afm_fork_config(fmt.settings, path), sort_keys=False).strip()
    masks = (
        "observations train: the whole `output` is in the loss, as stock LLaMA-Factory reading these rows with "
        "the same `dataset_info.json` trains it"
        if fmt.settings.get("observations") == "train"
        else "it finds `<observation>` spans by token ids, so use a Qwen2/Llama-3-family tokenizer, see "
        "docs/afm_format.md"
    )
    return f"**AFM's LLaMA-Factory fork** (`afm`; {masks}; {length_note(fmt.settings)}):\n\n```yaml\n{config}\n```"


def trl_card_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    snippet = trl_snippet(fmt.settings, path, file_type)
    observed = ", the observations in them too" if fmt.settings.get("observations") == "train" else ""
    return f"**TRL** (`trl`, pre-tokenized `input_ids` + `assistant_masks`{observed}):\n\n```python\n{snippet}\n```"


def messages_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    dataset = axolotl_dataset(repo_id, fmt.name) if repo_id else axolotl_dataset(path)
    entry = yaml.safe_dump({"chat_template": "tokenizer_default", "datasets": [dataset]}, sort_keys=False).strip()
    return f"**axolotl** (`{fmt.name}`):\n\n```yaml\n{entry}\n```"


def openai_snippet(fmt: FormatFiles, path: str, repo_id: str | None, file_type: str) -> str:
    tools = (
        "JSON text (one Arrow column cannot hold every row's schemas)"
        if fmt.settings.get("tools_as_text")
        else "a list"
    )
    verl = yaml.safe_dump({"data": {"train_files": f"{path}/train-*", "custom_cls": {
        "path": "pkg://factory.export.verl_sft", "name": "NativeSFTDataset"}}}, sort_keys=False).strip()  # fmt: skip
    head = (
        "**Native tool calls** (`openai`: OpenAI's fine-tuning chat format; assistant `tool_calls` with "
        f"`arguments` as JSON text, `tool` messages with `tool_call_id`, `weight` 0/1, and `tools` as {tools}). "
    )
    if fmt.settings.get("observations") == "train":  # a weight the trainer ignores is not a mask
        return head + (
            "The `tool` messages carry `weight: 1` (observations train). OpenAI's fine-tuning and verl's multi-turn "
            "SFT dataset train assistant messages only, so they cannot train these rows as exported: use axolotl, "
            "or TRL with the `trl` export (`--tool-calls native`).\n\n"
            + messages_snippet(fmt, path, repo_id, file_type)
        )
    return head + (
        "Export with `--jsonl` to upload to OpenAI fine-tuning as is. TRL ignores the per-message weight: for "
        "TRL use the `trl` export with `--tool-calls native`, pre-tokenized from these rows. verl's multi-turn "
        "SFT trainer (its stock dataset cannot read JSON-text tools and trains every assistant message):"
        f"\n\n```yaml\n{verl}\n```\n\n" + messages_snippet(fmt, path, repo_id, file_type)
    )
