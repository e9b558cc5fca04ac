"""The persona record: id, text, source (plus the parent an expansion came from)."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field


class Persona(BaseModel):
    """One persona, as every stage sees it, whatever file or library it came from."""

    # Frozen: a persona is a value that samplers and dedup pass around and compare.
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    source: str = Field(min_length=1)
    parent_id: str | None = None  # the seed an LLM expansion grew this persona from
    tags: dict[str, str] = Field(default_factory=dict)  # e.g. kind, occupation, place

    def __hash__(self) -> int:
        # pydantic's frozen hash would hash the tags dict and fail; equal personas still hash equal.
        return hash((self.id, self.text, self.source, self.parent_id))


def text_id(text: str) -> str:
    """A stable id for a persona that came without one: "h" + 12 hex digits of SHA-1.

    Whitespace at the ends does not change it, so a re-saved file keeps its ids.
    """
    return "h" + hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]
