"""A preference pair: one context and the continuation to prefer over another (the one shape the three
preference formats are written from).

Both paths hand their pairs over in this shape: the refine path's step-level pairs (pairs_refine.py,
built at export time from the kept trajectories) and the pairs a stage stored in `preference_pairs`
(pairs_stored.py, e.g. coa "when to act"). `prompt`, `chosen` and `rejected` are chat messages
`{role, content}`; a side is None when only the other one exists (a KTO-only row), and `missing` then
says why, so a format that needs both sides counts the row under that reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Message = dict[str, str]  # {"role": system | user | assistant | tool, "content": text}
MESSAGE_ROLES = ("system", "user", "assistant", "tool")
# What str.isspace() calls whitespace: a blank assistant turn never trains (factory.mask.render's rule), so it is
# neither a chosen nor a rejected step.
BLANK = re.compile(r"^\s*$")


@dataclass
class Pair:
    pair_id: str  # stable across exports: the trajectory and the turn of the mistake, or the stored id
    kind: str  # refine_step | when_to_act | when_not_to_act | ...
    source: str  # refine | coa | ...
    prompt: list[Message]
    chosen: list[Message] | None
    rejected: list[Message] | None
    task_id: str | None = None
    script_id: str | None = None
    trajectory_id: str | None = None
    missing: str | None = None  # why a side is None (counted by the formats that need both)

    def metadata(self) -> dict[str, Any]:
        """The columns every preference format carries beside its own (trainers ignore them)."""
        return {"pair_id": self.pair_id, "kind": self.kind, "source": self.source, "task_id": self.task_id,
                "script_id": self.script_id, "trajectory_id": self.trajectory_id}  # fmt: skip


def message(role: str, content: str) -> Message:
    return {"role": role, "content": content}


def turn_messages(turns: list[dict[str, Any]]) -> list[Message]:
    """Stored turns as chat messages (role and content only: the masks are the pair's, not the turns')."""
    return [message(turn["role"], turn["content"]) for turn in turns]


def messages_problem(messages: Any, side: str, assistant: bool = False) -> str | None:
    """Why a stored side is not a list of chat messages (assistant ones for a continuation), or None."""
    if not isinstance(messages, list) or not messages:
        return f"{side} is not a non-empty list of messages"
    for item in messages:
        if (
            not isinstance(item, dict)
            or item.get("role") not in MESSAGE_ROLES
            or not isinstance(item.get("content"), str)
        ):
            return f"{side} holds a message without a known role and text content"
    if assistant and (messages[0]["role"] != "assistant" or BLANK.match(messages[0]["content"])):
        return f"{side} does not start with a non-blank assistant message"
    return None
