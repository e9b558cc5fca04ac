"""The decision point of a coa trajectory: where it first acts.

A distilled coa row's `turns` are the AFM instruction as a user turn, then assistant turns
that end where an observation begins (factory/coa/afm/render.py): the first assistant turn
that calls a tool holds what the agent wrote before that call (think, plan, think) and the
call itself, up to the newline before its observation. A pair's prompt is every turn before
that one, as the trained rows (the `messages` export) have them; the acting side is that
turn, byte for byte. A row whose assistant turns call no tool has no decision point.

A row whose `turns` are not that (not JSON, a turn without a string role and content, a tool call
with nothing before it) is a point with its `problem` said: a counted reason, not a crashed stage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...store import Store
from ..afm.blocks import parse_blocks
from ..tools.registry import tool_tags

Message = dict[str, str]

# Verified (grammar-valid) distilled rows of the coa path, with the domain their run worked in.
CANDIDATES_SQL = """
    SELECT t.trajectory_id, t.task_id, t.variant, c.domain, t.correct, t.turns
    FROM trajectories t LEFT JOIN coa_traces c ON c.trace_id = t.trace_id
    WHERE t.source = 'coa' AND t.verified AND t.turns IS NOT NULL
    ORDER BY t.trajectory_id"""


@dataclass(frozen=True)
class DecisionPoint:
    trajectory_id: str
    task_id: str | None
    variant: str  # mas | code: the AFM grammar the row follows
    domain: str | None  # qa | math | code, as the coa run saw the task
    correct: bool | None  # the trajectory's own final answer, as the coa run checked it
    prompt: list[Message]  # the messages before the first tool call
    acting: Message | None  # the assistant message that makes it (None: the row never calls a tool)
    tool: str | None  # the tool it calls first
    problem: str | None = None  # why the row's turns cannot be read (then no prompt and no acting turn)


class MalformedTurns(ValueError):
    """A stored row whose `turns` are not the messages the distiller writes."""


def read_points(store: Store) -> list[DecisionPoint]:
    points = []
    for trajectory_id, task_id, variant, domain, correct, turns in store.query(CANDIDATES_SQL):
        row = (trajectory_id, task_id, variant or "mas", domain, correct)
        try:
            points.append(DecisionPoint(*row, *split_at_first_call(messages_of(turns))))
        except MalformedTurns as exc:
            points.append(DecisionPoint(*row, [], None, None, problem=str(exc)))
    return points


def messages_of(turns: str) -> list[Message]:
    """The row's turns as messages (role and content), or MalformedTurns saying what is wrong."""
    try:
        loaded = json.loads(turns)
    except ValueError:
        raise MalformedTurns(f"turns are not JSON: {turns[:60]!r}") from None
    if not isinstance(loaded, list):
        raise MalformedTurns(f"turns are not a list of messages: {turns[:60]!r}")
    for index, turn in enumerate(loaded):
        if not (isinstance(turn, dict) and isinstance(turn.get("role"), str) and isinstance(turn.get("content"), str)):
            raise MalformedTurns(f"turn {index} has no string role and content: {json.dumps(turn)[:60]}")
    return [{"role": turn["role"], "content": turn["content"]} for turn in loaded]


def split_at_first_call(messages: list[Message]) -> tuple[list[Message], Message | None, str | None]:
    """(the messages before the first tool-calling assistant turn, that turn, its first tool); no call: (all, None, None)."""
    for index, message in enumerate(messages):
        tool = first_tool(message["content"]) if message["role"] == "assistant" else None
        if tool is not None and index == 0:
            raise MalformedTurns("the first turn already calls a tool: no prompt before it")
        if tool is not None:
            return messages[:index], message, tool
    return messages, None, None


def first_tool(text: str) -> str | None:
    tools = set(tool_tags())
    return next((block.tag for block in parse_blocks(text) if block.tag in tools), None)
