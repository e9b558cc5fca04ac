"""What an export writes: formats, file type, splits, upsampling (a strict config model)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import StrictModel, validate_config
from ..errors import FactoryError
from .registry import ALL_FORMATS, FORMATS, FormatName  # noqa: F401  (declared once, in registry.py)


class ExportOptions(StrictModel):
    formats: list[FormatName] = Field(default_factory=lambda: list(ALL_FORMATS), min_length=1)
    file_type: Literal["parquet", "jsonl"] = "parquet"
    # Share of task groups held out when the store has no curation split (a split filter's verdicts win).
    validation: float = Field(0.05, ge=0.0, le=0.5)
    # "repeat": a row of weight k > 1 is written floor(k) times, each with weight k / floor(k).
    upsample: Literal["none", "repeat"] = "none"
    max_file_mb: int = Field(500, ge=1)  # shards rotate past this size (the Hub viewer prefers < 1 GB files)
    # The trl format is pre-tokenized with this tokenizer (a local folder or a Hub name), by factory.mask.render.
    tokenizer: str | None = None
    max_length: int | None = Field(None, ge=16)  # trl rows: render keeps whole turns up to this many tokens
    # How the trl rows write actions: as the trajectory's own text (Thought/Action lines, AFM tags: what
    # AgentRefine and AFM trained on) or as native tool calls (the `openai` form: tools in the template's
    # system block, calls as the template writes them), for models served with a tool-call parser.
    tool_calls: Literal["text", "native"] = "text"
    # AutoCoA's SFT stage 3 (a world model): "train" puts the observations (tool / DM turns) in the loss as
    # well, in the formats that can say so per turn (messages, openai, trl); "mask" keeps them context only.
    observations: Literal["mask", "train"] = "mask"
    # Refine step-level preference pairs (preference, ranking, kto): the chosen step is the correction the
    # trajectory took, in every pair ("corrected") or only where it is a shortest-plan move of the world ("plan").
    pair_chosen: Literal["corrected", "plan"] = "corrected"
    license: str = "apache-2.0"
    pretty_name: str | None = None


def export_options(formats: str | list[str] | None = None, **values: object) -> ExportOptions:
    """Options from command-line style values: `formats` may be "all", one name or a list."""
    data = {key: value for key, value in values.items() if value is not None}
    if formats is not None:
        data["formats"] = list(ALL_FORMATS) if formats == "all" else [formats] if isinstance(formats, str) else formats
    return validate_config(ExportOptions, data, "export options")


class ExportError(FactoryError):
    """Nothing to export, a bad split name, a failed write or push: one line that says why."""
