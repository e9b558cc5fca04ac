"""The common shape of a tool: `Tool` (async, one string in) and `ToolResult` (text out).

A tool never raises for a bad argument, a failed fetch or broken code: the
agent sees the failure as its observation (`ok=False`) and can react to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ...llm import Result


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    text: str  # becomes the <observation> the agent reads
    meta: dict[str, Any] = field(default_factory=dict)  # for the trace: status, timings, sizes; not shown
    llm: tuple[tuple[str, Result], ...] = ()  # (model, result) of each LLM call the tool made (crawl summaries)


@dataclass(frozen=True)
class Goal:
    """Why the agent makes a call. AFM's crawl_page summarises a page toward the last
    web_search query and the reasoning before the call; these are the same two things,
    both visible in the distilled trajectory, plus the question."""

    question: str = ""
    query: str = ""  # the last web_search query of the run
    clues: str = ""  # the agent's reasoning for this call


@runtime_checkable
class Tool(Protocol):
    """A tool that also wants the agent's goal sets `takes_goal = True` and accepts `goal=`."""

    name: str

    async def __call__(self, argument: str) -> ToolResult: ...


def failure(text: str, **meta: Any) -> ToolResult:
    return ToolResult(ok=False, text=text, meta=meta)


def cap_text(text: str, max_chars: int) -> tuple[str, bool]:
    """At most `max_chars` of `text`, with a marker saying how much was cut."""
    if len(text) <= max_chars:
        return text, False
    cut = len(text) - max_chars
    return f"{text[:max_chars]}\n[... truncated: {cut} more characters]", True


def strip_fence(argument: str) -> str:
    """Models often wrap a tool argument in a markdown fence; the tool wants what is inside."""
    text = argument.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        first_newline = text.find("\n")
        return text[first_newline + 1 : -3].strip("\n") if first_newline != -1 else text[3:-3]
    return text
