"""The filter config: a YAML list of named filters, each a built-in kind or a raw SQL predicate.

    filters:
      - name: enough_tools
        kind: complexity
        min_tool_calls: 5
      - name: has_answer
        sql: "final_answer IS NOT NULL"
        reason: "no final answer"

A bad file stops with one line naming the file, the filter and the field.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..config import describe_validation_error, read_yaml_file
from ..errors import ConfigError

# Bump when the SQL a built-in compiles to changes meaning: every stored verdict is then recomputed.
COMPILER_VERSION = "1"

Source = Literal["refine", "coa", "import"]
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
KEY_COLUMNS = ("task_id", "persona_id", "script_id", "trace_id", "trajectory_id")
# pass_rate fields of the days the filter sampled its own rollouts: named in the error that says where sampling went
SAMPLING_FIELDS = ("policy", "samples", "concurrency")


class FilterSpec(BaseModel):
    """Fields every filter has. `sources` / `where` limit which rows it judges; the others are kept."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    sources: list[Source] | None = None
    where: str | None = None  # SQL predicate over trajectories columns

    def config_hash(self) -> str:
        """What decides the verdicts: kind and params, not the name or position."""
        params = self.model_dump(mode="json", exclude={"name"})
        text = json.dumps([COMPILER_VERSION, type(self).__name__, params], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class SqlFilter(FilterSpec):
    kind: Literal["sql"] = "sql"
    sql: str = Field(min_length=1)  # keep the rows where this predicate is true (NULL counts as false)
    reason: str | None = None  # why a row is dropped; default "failed <name>"


class ComplexityFilter(FilterSpec):
    kind: Literal["complexity"]
    min_tool_calls: int | None = Field(5, ge=0)  # AFM keeps trajectories with >= 5 tool interactions
    min_turns: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _has_threshold(self) -> "ComplexityFilter":
        if self.min_tool_calls is None and self.min_turns is None:
            raise ValueError("set min_tool_calls, min_turns or both")
        return self


class ReflectionFilter(FilterSpec):
    kind: Literal["reflection"]
    min_reflections: int = Field(1, ge=0)  # coa/import: stats reflections (+ replans)
    count_replans: bool = True
    min_corrections: int = Field(1, ge=0)  # refine: n_corrections


class CorrectnessFilter(FilterSpec):
    kind: Literal["correctness"]
    require: list[Literal["verified", "correct"]] = Field(default_factory=lambda: ["verified", "correct"], min_length=1)
    unknown_passes: bool = True  # a NULL verdict (no checker ran) keeps the row


class PassRateFilter(FilterSpec):
    kind: Literal["pass_rate"]
    model: str = Field(min_length=1)  # rollouts.model label: the policy model `factory passrate` sampled
    max_pass_rate: float = Field(0.3, ge=0, le=1)
    min_pass_rate: float = Field(0.0, ge=0, le=1)
    min_samples: int = Field(8, ge=1)
    drop_all_correct_domains: list[str] = Field(default_factory=lambda: ["code"])
    drop_uniform: bool = False  # all rollouts scored alike: no group-relative signal for GRPO
    missing: Literal["drop", "keep", "fail"] = "drop"  # tasks with fewer than min_samples judged rollouts
    tasks: str | None = None  # the task file the rollouts come from: named in the sampling command, read by the export

    @model_validator(mode="before")
    @classmethod
    def _judges_only(cls, data: Any) -> Any:
        """Sampling moved out of the filter: a config that still asks for it says where it went."""
        asked = [key for key in SAMPLING_FIELDS if isinstance(data, dict) and key in data]
        if asked:
            raise ValueError(
                f"'{asked[0]}': filters only judge the rollouts already stored; sample them with "
                "`factory passrate RUN_DIR --tasks FILE --model M` (or the pipeline's passrate stage), "
                "then drop 'policy', 'samples' and 'concurrency' here"
            )
        if isinstance(data, dict) and "model" not in data:
            raise ValueError("name the policy model's rollouts label in 'model'")
        return data


class RedundancyFilter(FilterSpec):
    kind: Literal["redundancy"]
    similarity: float = Field(0.9, gt=0, le=1)  # word-set jaccard at or above which two inputs are near-duplicates
    action: Literal["drop", "flag"] = "drop"  # flag: keep, with the repeat in the reason


class DedupFilter(FilterSpec):
    kind: Literal["dedup"]
    near: bool = True
    threshold: float = Field(0.8, gt=0, le=1)  # word-shingle jaccard for a near-duplicate
    shingle_words: int = Field(2, ge=1, le=8)
    bands: int = Field(6, ge=1, le=64)  # MinHash LSH: bands x rows_per_band permutations
    rows_per_band: int = Field(2, ge=1, le=16)
    max_bucket: int = Field(100, ge=2)  # compare each row with at most this many earlier rows of a bucket
    seed: int = 0


class UpsampleFilter(FilterSpec):
    """Reweights recoveries. `corrections` weighs every refine row with `min_corrections` fixed mistakes (a
    verified refine row has them by construction); `recovery` selects: a refine row with `min_mistake_run`
    mistakes in a row before the move that fixed them, or whose first mistake is at assistant turn
    `late_first_mistake` or later (either may be None: off)."""

    kind: Literal["upsample"]
    weight: float = Field(2.0, gt=0)
    triggers: list[Literal["low_double_check", "corrections", "recovery"]] = Field(
        default_factory=lambda: ["low_double_check", "corrections"], min_length=1
    )
    min_corrections: int = Field(1, ge=1)
    min_mistake_run: int | None = Field(2, ge=2)  # recovery: the fix took this many tries (the first ones refused)
    late_first_mistake: int | None = Field(4, ge=2)  # recovery: the first mistake came at this assistant turn or later

    @model_validator(mode="after")
    def _recovery_has_a_rule(self) -> "UpsampleFilter":
        if "recovery" in self.triggers and self.min_mistake_run is None and self.late_first_mistake is None:
            raise ValueError("the recovery trigger needs min_mistake_run, late_first_mistake or both")
        return self


class SplitFilter(FilterSpec):
    kind: Literal["split"]
    splits: dict[str, float] = Field(default_factory=lambda: {"sft": 0.5, "rl": 0.5}, min_length=1)
    keys: list[Literal["task_id", "persona_id", "script_id", "trace_id", "trajectory_id"]] = Field(
        default_factory=lambda: ["task_id", "persona_id", "script_id"], min_length=1
    )
    salt: str = ""

    @model_validator(mode="after")
    def _fractions_sum_to_one(self) -> "SplitFilter":
        if any(share < 0 for share in self.splits.values()) or abs(sum(self.splits.values()) - 1) > 1e-6:
            raise ValueError(f"split shares must be >= 0 and sum to 1, got {sum(self.splits.values()):g}")
        return self


class GroundedFilter(FilterSpec):
    kind: Literal["grounded"]
    sources: list[Source] | None = Field(default_factory=lambda: ["coa", "import"])
    min_share: float = Field(1.0, ge=0, le=1)  # of the answer-bearing claims, supported by the observation they cite
    unknown_passes: bool = True  # rows written before the coa run recorded claims
    allow_answer_before_tool: bool = True  # false: drop rows whose answer was written before any observation


class GroundedThoughtsFilter(FilterSpec):
    """A refine row's trained thoughts that assert a state nothing the player read or the world shows."""

    kind: Literal["grounded_thoughts"]
    sources: list[Source] | None = Field(default_factory=lambda: ["refine"])
    max_ungrounded: int = Field(0, ge=0)  # trained thoughts with an ungrounded state assertion a row may hold
    unknown_passes: bool = True  # rows written before the refine run recorded the check


class TemplateFilter(FilterSpec):
    kind: Literal["template"]
    sources: list[Source] | None = Field(default_factory=lambda: ["coa", "import"])
    max_share: float | None = Field(0.2, gt=0, le=1)  # of the run's blocks of a kind one opening may open; None: off
    words: int = Field(3, ge=1, le=8)  # an opening is a block's first `words` words
    min_rows: int = Field(2, ge=1)  # an opening repeated inside one row only is not a template
    blocks: list[Literal["think", "reflection"]] = Field(default_factory=lambda: ["think", "reflection"], min_length=1)
    phrases: list[str] = Field(default_factory=list)  # openings that drop a row wherever they occur

    @model_validator(mode="after")
    def _judges_something(self) -> "TemplateFilter":
        if self.max_share is None and not self.phrases:
            raise ValueError("set max_share, phrases or both")
        return self


class DecontaminateFilter(FilterSpec):
    kind: Literal["decontaminate"]
    sets: list[Path] = Field(min_length=1)  # evaluation sets: task files with questions and answers
    ngrams: int = Field(12, ge=3, le=50)  # datatrove's NGramsDecontConfig.n_grams
    query_ngrams: bool = False  # also match n-grams of an evaluation question alone (datatrove: find_query_ngrams)


KINDS: dict[str, type[FilterSpec]] = {
    "sql": SqlFilter, "complexity": ComplexityFilter, "reflection": ReflectionFilter,
    "correctness": CorrectnessFilter, "pass_rate": PassRateFilter, "redundancy": RedundancyFilter,
    "dedup": DedupFilter, "upsample": UpsampleFilter, "split": SplitFilter,
    "grounded": GroundedFilter, "grounded_thoughts": GroundedThoughtsFilter, "template": TemplateFilter,
    "decontaminate": DecontaminateFilter,
}  # fmt: skip


class FilterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    filters: list[FilterSpec]
    source: str = "config"  # the file it came from, for messages


def load_filter_config(path: str | Path) -> FilterConfig:
    path = Path(path)
    data = read_yaml_file(path, "filter config")
    items = data.get("filters") if isinstance(data, dict) else data
    if isinstance(data, dict) and set(data) - {"filters"}:
        extra = sorted(set(data) - {"filters"})[0]
        raise ConfigError(f"{path}: field '{extra}': unknown field (the file holds a 'filters' list)")
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: field 'filters': expected a non-empty list of filters")
    return parse_filters(items, str(path))


def parse_filters(items: list[Any], source: str) -> FilterConfig:
    specs: list[FilterSpec] = []
    for index, item in enumerate(items):
        spec = parse_one(item, f"{source}: filters.{index}")
        if any(other.name == spec.name for other in specs):
            raise ConfigError(f"{source}: filters.{index}: field 'name': '{spec.name}' is used twice")
        specs.append(spec)
    return FilterConfig(filters=specs, source=source)


def parse_one(item: Any, where: str) -> FilterSpec:
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: expected a mapping with 'name' and 'kind' (or 'sql'), got {type(item).__name__}")
    kind = item.get("kind", "sql" if "sql" in item else None)
    if not isinstance(kind, str) or kind not in KINDS:
        known = ", ".join(k for k in KINDS if k != "sql")
        shown = f"unknown filter kind '{kind}'" if kind is not None else "missing 'kind' (or 'sql')"
        raise ConfigError(
            f"{where} ({item.get('name', 'unnamed')}): field 'kind': {shown} (use one of: {known}; "
            "or give 'sql' for a raw predicate)"
        )
    label = f"{where} ({item.get('name', 'unnamed')})"
    try:
        return KINDS[kind].model_validate(item)
    except ValidationError as exc:
        first = exc.errors(include_context=False)[0]
        if first["loc"]:
            message = describe_validation_error(exc, label)
        else:  # a check across fields: no single field to name
            message = f"{label}: {first['msg'].removeprefix('Value error, ')}"
    # Raised outside the handler: the validation error's traceback would otherwise ride along.
    raise ConfigError(message)
