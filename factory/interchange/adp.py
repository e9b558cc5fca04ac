"""ADP (Agent Data Protocol 1.5.0, neulab/agent-data-protocol `schema/trajectory.py`) out of and into the
native form.

ADP is one flat `content` list told apart by `class_`: a user message is a `text_observation` with
`source: "user"`; a tool call an `api_action` (`function`, `kwargs`, `tool_call_id`; the thought before it
its `description`); a tool result a `text_observation` with `source: "environment"` and the call's
`tool_call_id` (ADP 1.3+ links every pair); a message to the user a `message_action`. ADP has no system
prompt, no tool schemas on the trajectory and no per-step training flag, and forbids unknown keys on its
items, so those travel in `details.factory`: `system`, `tools`, `source`, and `masked` (the content indices
of assistant items that do not train). An assistant message with several calls becomes several actions,
the first carrying its text. Reading takes ADP files from any producer: a `code_action` becomes a call
of the `code` tool with the program as `code`, an `agent`-sourced text observation an assistant message.
"""

from __future__ import annotations

import json
from typing import Any

from ..export.native import arguments_object
from ..records import Turn
from .shapes import Imported, InterchangeError, text_of

VERSION = "1.5.0"


def to_adp(trajectory_id: str, source: str, messages: list[dict[str, Any]], tools: list[dict]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    masked: list[int] = []
    system = [m.get("content") or "" for m in messages if m["role"] == "system"]
    for message in messages:
        role = message["role"]
        if role == "user":
            content.append({"class_": "text_observation", "content": message.get("content") or "", "source": "user"})
        elif role == "tool":
            content.append({"class_": "text_observation", "tool_call_id": message.get("tool_call_id"),
                            "content": message.get("content") or "", "name": message.get("name"),
                            "source": "environment"})  # fmt: skip
        elif role == "assistant":
            if not message.get("weight", 1):
                masked.append(len(content))
            content += _actions(message)
    details = {"factory": {"source": source, "system": system, "tools": tools, "masked": masked}}
    return {"schema_version": VERSION, "id": trajectory_id, "content": content, "details": details}


def _actions(message: dict[str, Any]) -> list[dict[str, Any]]:
    text, calls = message.get("content") or "", message.get("tool_calls") or []
    if not calls:
        return [{"class_": "message_action", "content": text, "description": None}]
    return [{"class_": "api_action", "tool_call_id": c["id"], "function": c["function"]["name"],
             "kwargs": arguments_object(c["function"]["arguments"]), "description": text if i == 0 else None}
            for i, c in enumerate(calls)]  # fmt: skip


def from_adp(doc: Any) -> Imported:
    if not isinstance(doc, dict) or not isinstance(doc.get("content"), list) or not doc.get("id"):
        raise InterchangeError("not an ADP trajectory (id and a content list are required)")
    ours = (doc.get("details") or {}).get("factory") or {}
    masked = set(ours.get("masked") or [])
    turns = [Turn(role="system", content=text) for text in ours.get("system") or []]
    for index, item in enumerate(doc["content"]):
        turns += _item_turns(item, index, index not in masked, f"content[{index}]")
    return Imported(str(doc["id"]), _merged(turns), ours.get("tools") or [], ours.get("source"))


def _item_turns(item: Any, index: int, trains: bool, where: str) -> list[Turn]:
    kind = item.get("class_") if isinstance(item, dict) else None
    if kind == "api_action":
        if not isinstance(item.get("function"), str) or not isinstance(item.get("kwargs"), dict):
            raise InterchangeError(f"{where}: an api_action needs function and kwargs (an object)")
        return [_call_turn(item, item["function"], item["kwargs"], trains, index)]
    if kind == "code_action":
        return [_call_turn(item, "code", {"code": item.get("content") or ""}, trains, index)]
    if kind == "message_action":
        return [Turn(role="assistant", content=text_of(item.get("content") or "", where), loss=trains)]
    if kind == "text_observation":
        source = item.get("source")
        text = text_of(item.get("content") or "", f"{where}.content")
        if source == "environment":
            return [Turn(role="tool", content=text, kind="observation", tool_call_id=item.get("tool_call_id"),
                         name=item.get("name"))]  # fmt: skip
        if source in ("user", "agent"):
            return [Turn(role="user" if source == "user" else "assistant", content=text, loss=source == "agent")]
        raise InterchangeError(f"{where}.source {source!r} is not user, agent or environment")
    raise InterchangeError(
        f"{where}: class_ {kind!r} cannot be imported (api, code and message actions, text observations can)"
    )


def _call_turn(item: dict, name: str, kwargs: dict, trains: bool, index: int) -> Turn:
    call = {
        "id": item.get("tool_call_id") or f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(kwargs, ensure_ascii=False)},
    }
    return Turn(
        role="assistant", content=item.get("description") or "", loss=trains, kind="tool_call", tool_calls=[call]
    )


def _merged(turns: list[Turn]) -> list[Turn]:
    """Actions written from one assistant message (its later calls carry no text) back into one turn."""
    out: list[Turn] = []
    for turn in turns:
        previous = out[-1] if out else None
        joins = previous is not None and previous.role == turn.role == "assistant" and previous.tool_calls
        if joins and turn.tool_calls and not turn.content:
            previous.tool_calls = previous.tool_calls + turn.tool_calls
            continue
        out.append(turn)
    return out
