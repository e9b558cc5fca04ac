"""The dataset card: Hub YAML metadata (configs per format, license, sizes) and how the data was made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from huggingface_hub import DatasetCard, DatasetCardData

from ..funnels import path_funnels
from ..prompts import render_prompt
from ..store import Store
from . import card_facts as facts
from .observations import world_model_rows
from .options import ExportError
from .selection import KeptCounts, kept_counts, selection_sql
from .snippets import consumer_section

if TYPE_CHECKING:
    from .dataset import ExportResult

TAGS = ["agent", "synthetic", "trajectories", "sft", "tool-use", "agentrefine", "chain-of-agents"]
SIZE_STEPS = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]  # fmt: skip
SAMPLE_CHARS = 300
SAMPLE_ITEMS = 24  # token-id lists (trl rows) are cut to this many items


def size_category(rows: int) -> str:
    return next((label for limit, label in SIZE_STEPS if rows < limit), "100M<n<1B")


def card_data(result: ExportResult) -> DatasetCardData:
    configs = []
    for index, fmt in enumerate(result.formats):
        tag = f"{fmt.fingerprint}-" if fmt.fingerprint else ""  # see dataset.fingerprint_shards
        extension = _extension(fmt)
        files = [{"split": split, "path": f"{fmt.folder.as_posix()}/{split}-{tag}*.{extension}"} for split in fmt.rows]
        configs.append({"config_name": fmt.name, "data_files": files, **({"default": True} if index == 0 else {})})
    largest = max((sum(fmt.rows.values()) for fmt in result.formats), default=0)
    world_model = world_model_rows(result.options.observations, [fmt.name for fmt in result.formats])
    tags = TAGS + (["world-model"] if world_model else [])  # AutoCoA's SFT stage 3
    return DatasetCardData(
        license=result.options.license, pretty_name=pretty_name(result), task_categories=["text-generation"],
        tags=tags, size_categories=[size_category(largest)], configs=configs,
    )  # fmt: skip


def pretty_name(result: ExportResult) -> str:
    return result.options.pretty_name or f"factory agent trajectories ({result.run_dir.resolve().name})"


def render_card(store: Store, result: ExportResult, load_path: str = ".") -> str:
    """README.md text; the YAML header is parsed back with huggingface_hub before it is returned."""
    data = card_data(result)
    body = render_prompt(
        "card/dataset_card", pretty_name=pretty_name(result), configs=configs_table(store, result),
        load_path=load_path, default_config=result.formats[0].name, split_rule=split_rule(result),
        sources=sources_table(store), funnels=funnels_text(store), filters=filters_table(store), drops=drops_text(store),
        upsampling=upsampling_text(store),
        models=models_text(store), prompts=prompts_table(store), runs=runs_table(store),
        samples=samples_text(store, result), license=result.options.license,
        consumers=consumer_section(result, load_path, observed(store, result)), rl=rl_text(result),
    )  # fmt: skip
    text = f"---\n{data.to_yaml()}\n---\n\n{body}\n"
    parsed = DatasetCard(text).data.to_dict()
    if [c["config_name"] for c in parsed.get("configs", [])] != [f.name for f in result.formats]:
        raise ExportError("the dataset card's YAML header did not parse back to its configs")
    return text


def observed(store: Store, result: ExportResult) -> tuple[int, int] | None:
    """With `--observations train`: how many observations train, and how many of them are refusals."""
    if not world_model_rows(result.options.observations, [fmt.name for fmt in result.formats]):
        return None
    return facts.observation_counts(store, selection_sql(result.options), list(result.selected))


def write_card(store: Store, result: ExportResult, load_path: str | None = None) -> Path:
    """out/README.md; `load_path` is what the card tells users to pass to load_dataset (a repo id or folder)."""
    path = result.out / "README.md"
    path.write_text(render_card(store, result, load_path or str(result.out)), encoding="utf-8")
    return path


def table(headers: list[str], rows: list[tuple | list]) -> str:
    if not rows:
        return "_none recorded_"
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


def rl_text(result: ExportResult) -> str:
    """Where the RL split went (verl rows, factory/export/verl.py: coa queries and refine worlds), if the run
    had one."""
    rl = result.rl
    if rl is None or not rl.rows:
        return "_no RL split_"
    runs: dict[str, list[str]] = {}  # one folder per RL run (reward and tool layout), with its files
    for path in rl.files:
        runs.setdefault(path.parent.as_posix(), []).append(f"`{path.name}`")
    folders = "; ".join(f"`{folder}/`: {', '.join(names)}" for folder, names in runs.items())
    return (
        f"{rl.rows} RL rows (queries, or refine worlds to play; {rl.trajectories} kept trajectories) of the RL "
        "split are written as verl rows "
        f"(`data_source`, `prompt`, `ability`, `reward_model`, `extra_info`), never as SFT rows, one folder "
        f"per RL run: {folders}. Give one folder's files to one run's `data.train_files`: rows of two folders "
        "differ in their ground-truth type and tools, and neither verl nor AFM's fork loads them together. "
        "No query or world is also in an SFT split. Layout, the reward functions and the refine_world agent "
        "loop that read it: factory's docs/rl_handoff.md and docs/environments.md."
    )


def configs_table(store: Store, result: ExportResult) -> str:
    rows = [(f.name, split, rows, len(f.files[split])) for f in result.formats for split, rows in f.rows.items()]
    return kept_text(kept_counts(store, result.options)) + "\n\n" + table(["config", "split", "rows", "files"], rows)


def kept_text(kept: KeptCounts) -> str:
    """The selection's counts (the export's and the report's too): a format may then leave rows out."""
    sources = ", ".join(f"{source} {n}" for source, n in kept.by_source.items())
    splits = ", ".join(
        f"{split} {counted(kept.rows[split], 'row')} "
        f"({counted(kept.split_trajectories[split], 'trajectory', 'trajectories')})"
        for split in kept.rows
    )
    return (
        f"Kept {kept.kept} of {kept.trajectories} trajectories in the run ({sources}): {kept.verified} verified, "
        f"{kept.dropped} of them dropped by a filter, {kept.unverified} not verified and never exported. "
        f"By split: {splits}; total weight {kept.kept_weight:g}."
    )


def counted(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def split_rule(result: ExportResult) -> str:
    rule = (
        f"the split a split filter wrote when there is one, else a hash of the task group puts "
        f"{result.options.validation:.0%} of task groups in `validation`; no task is in both splits."
    )
    if result.options.upsample == "repeat":
        rule += " Rows of weight k > 1 are repeated floor(k) times, each with weight k / floor(k)."
    return rule


def sources_table(store: Store) -> str:
    return table(["source", "trajectories", "verified", "verified and correct"], facts.rows_by_source(store))


def funnels_text(store: Store) -> str:
    lines = [
        f"- {path}: " + " -> ".join(f"{name.replace('_', ' ')} {n}" for name, n in funnel.items())
        for path, funnel in path_funnels(store).items()
    ]
    return "\n".join(lines) or "_none recorded_"


def filters_table(store: Store) -> str:
    return table(["filter", "kind", "params", "config hash"], facts.filter_configs(store))


def upsampling_text(store: Store) -> str:
    """Each upsample filter's rule in words and its effect: how many kept rows weigh more than 1."""
    lines = []
    for name, params, weighted, kept in facts.upsampling(store):
        try:
            spec = json.loads(params)
        except (TypeError, ValueError):
            spec = {}
        spec = spec if isinstance(spec, dict) else {}
        lines.append(
            f"- `{name}`: {upsample_rule(spec)}. It reweighted {counted(weighted, 'verified row')}, "
            f"{kept} of them kept by every filter."
        )
    return "\n".join(lines) or "No upsampling: every row weighs 1."


def upsample_rule(spec: dict[str, Any]) -> str:
    """An upsample filter's params (filters/config.py UpsampleFilter, as stored) as the rule in words."""
    triggers, parts = spec.get("triggers") or [], []
    if "low_double_check" in triggers:
        parts.append("coa/import rows that recovered from a double check scored 2 or less")
    if "corrections" in triggers:
        parts.append(f"refine rows with at least {spec.get('min_corrections')} corrected mistake(s)")
    if "recovery" in triggers and spec.get("min_mistake_run") is not None:
        parts.append(f"refine rows where {spec['min_mistake_run']} or more mistakes came in a row before the fix")
    if "recovery" in triggers and spec.get("late_first_mistake") is not None:
        parts.append(f"refine rows whose first mistake is at assistant turn {spec['late_first_mistake']} or later")
    return f"weight {spec.get('weight', 1):g} for " + "; or ".join(parts or ["no rows"]) + "; every other row weighs 1"


def drops_text(store: Store) -> str:
    per_filter, reasons = facts.filter_drops(store)
    judged = table(["filter", "judged", "dropped", "reweighted"], per_filter)
    return judged + "\n\n" + table(["filter", "reason", "rows"], reasons)


def models_text(store: Store) -> str:
    usage = facts.model_usage(store)
    headers = ["stage", "provider", "model", "calls", "ok", "prompt tokens", "completion tokens", "cost USD",
               "cache hits"]  # fmt: skip
    prompt, completion = sum(r[5] for r in usage), sum(r[6] for r in usage)
    costs = [r[7] for r in usage if r[7] is not None]
    cost = f"${sum(costs):.4f}" if costs else "unknown (no prices for these models)"
    total = f"Total: {sum(r[3] for r in usage)} calls, {prompt} prompt + {completion} completion tokens, cost {cost}."
    return table(headers, usage) + "\n\n" + total


def prompts_table(store: Store) -> str:
    return table(["stage", "system prompt sha256", "calls"], facts.prompt_fingerprints(store))


def _extension(fmt) -> str:
    """What the format's shards are (the interchange formats write JSON lines whatever the export's file type)."""
    first = next((path for paths in fmt.files.values() for path in paths), None)
    return "jsonl" if first is not None and str(first).endswith(".jsonl") else "parquet"


def runs_table(store: Store) -> str:
    return table(["command", "started", "status", "model", "temperature", "max tokens"], facts.runs(store))


def samples_text(store: Store, result: ExportResult) -> str:
    parts = []
    for fmt in result.formats:
        split = next(iter(fmt.files))
        files = [str(result.out / path) for path in fmt.files[split]]
        rows = [shorten(row) for row in facts.sample_rows(store, files, _extension(fmt))]
        parts.append(f"`{fmt.name}` ({split}):\n\n```json\n{json.dumps(rows, indent=1, ensure_ascii=False)}\n```")
    return "\n\n".join(parts)


def shorten(value: Any) -> Any:
    """A sample row with long strings cut, so the card stays readable."""
    if isinstance(value, str):
        return value if len(value) <= SAMPLE_CHARS else value[:SAMPLE_CHARS] + " [...]"
    if isinstance(value, list):
        if len(value) > SAMPLE_ITEMS and all(isinstance(item, int) for item in value):
            return [*value[:SAMPLE_ITEMS], f"... {len(value) - SAMPLE_ITEMS} more"]
        return [shorten(item) for item in value]
    if isinstance(value, dict):
        return {key: shorten(item) for key, item in value.items()}
    return value
