"""The task record: one question with its reference answers or code tests, whatever row it came from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import FactoryError

Domain = Literal["qa", "math", "code"]
DOMAINS: tuple[str, ...] = ("qa", "math", "code")


class TaskError(FactoryError):
    """A task file or row cannot be read; the message names the file and row."""


class Task(BaseModel):
    """One task, as the CoA path and the checkers see it, whatever file it came from."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)  # "<data_source>/<index>", or "<data_source>/h<hash of the question>"
    question: str = Field(min_length=1)
    answers: list[str] = Field(default_factory=list)  # reference answer and aliases; empty for code
    tests: dict[str, Any] | None = None  # code: {"stdin", "expected_output"} or {"functional", "func_name"}
    domain: Domain
    source: str
    prompt: list[dict[str, Any]] | None = None  # the original chat prompt, when the row had one
    extra: dict[str, Any] = Field(default_factory=dict)  # extra_info, ability, ... as they came
