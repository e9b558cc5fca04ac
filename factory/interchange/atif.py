"""ATIF (Agent Trajectory Interchange Format, Harbor RFC 0001, v1.7) out of and into the native form.

Out (`to_atif`): a system or user message is a step of that source; an assistant message an `agent` step
whose `message` is its text and whose `tool_calls` are `{tool_call_id, function_name, arguments}` (an
object); the tool results that answer it go in that step's `observation.results` (`source_call_id`), as
ATIF attaches results to the step that called. Whether the step trains is `extra.train` (ATIF has no such
field; `is_copied_context` and `llm_call_count: 0` mean other things), a tool message's `name` is the
result's `extra.name`. The root names the agent (`factory`, its version, the tools as
`agent.tool_definitions`) and keeps the row's source and id (`extra`).

In (`from_atif`): the same mapping back, for files any ATIF producer wrote (v1.0 to v1.8): a step with
`is_copied_context: true` or an agent step with `llm_call_count: 0` does not train (the RFC says SFT must
drop them), and neither does one whose `extra.train` is false; an agent step with only `reasoning_content`
keeps it as its text; text parts of a multi-part message are joined (images cannot be held and are
refused). A document that breaks the schema's rules gets one line naming the step and the field.
"""

from __future__ import annotations

import json
from typing import Any

from ..export.native import arguments_object
from ..records import Turn
from ..version import __version__
from .shapes import Imported, InterchangeError, text_of

VERSION = "ATIF-v1.7"
SOURCES = {"system": "system", "user": "user", "assistant": "agent"}


def to_atif(trajectory_id: str, source: str, messages: list[dict[str, Any]], tools: list[dict]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "tool":
            _attach(steps, message)
            continue
        step: dict[str, Any] = {
            "step_id": len(steps) + 1,
            "source": SOURCES[message["role"]],
            "message": message.get("content") or "",
        }
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                step["tool_calls"] = [{"tool_call_id": c["id"], "function_name": c["function"]["name"],
                                       "arguments": arguments_object(c["function"]["arguments"])} for c in calls]  # fmt: skip
            step["extra"] = {"train": bool(message.get("weight", 1))}
        steps.append(step)
    agent = {"name": "factory", "version": __version__, **({"tool_definitions": tools} if tools else {})}
    return {"schema_version": VERSION, "session_id": trajectory_id, "trajectory_id": trajectory_id, "agent": agent,
            "steps": steps, "extra": {"source": source}}  # fmt: skip


def _attach(steps: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """A tool result goes to the agent step whose call it answers (the last one when none matches)."""
    call_id = message.get("tool_call_id")
    owner = next(
        (s for s in reversed(steps) if call_id and any(c["tool_call_id"] == call_id for c in s.get("tool_calls", []))),
        None,
    )
    owner = owner or (steps[-1] if steps else None)
    if owner is None:
        raise InterchangeError("a tool result before any step")
    result: dict[str, Any] = {"content": message.get("content") or ""}
    if owner.get("tool_calls") and call_id:
        result = {"source_call_id": call_id, **result}
    if message.get("name"):
        result["extra"] = {"name": message["name"]}
    owner.setdefault("observation", {"results": []})["results"].append(result)


def from_atif(doc: Any) -> Imported:
    if not isinstance(doc, dict) or not str(doc.get("schema_version", "")).startswith("ATIF-v"):
        raise InterchangeError("not an ATIF document (schema_version 'ATIF-v1.x' missing)")
    agent, steps = doc.get("agent"), doc.get("steps")
    if not isinstance(agent, dict) or not agent.get("name") or not isinstance(steps, list) or not steps:
        raise InterchangeError("ATIF needs agent.name and at least one step")
    turns: list[Turn] = []
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or step.get("step_id") != number:
            raise InterchangeError(f"steps[{number - 1}]: step_id must be {number} (sequential from 1)")
        turns += _step_turns(step, f"steps[{number - 1}]")
    identifier = doc.get("trajectory_id") or doc.get("session_id")
    if not identifier:
        raise InterchangeError("ATIF document without trajectory_id or session_id: nothing to name the row by")
    tools = agent.get("tool_definitions") or []
    return Imported(str(identifier), turns, tools, (doc.get("extra") or {}).get("source"))


def _step_turns(step: dict[str, Any], where: str) -> list[Turn]:
    source = step.get("source")
    if source not in ("system", "user", "agent"):
        raise InterchangeError(f"{where}.source {source!r} is not system, user or agent")
    if "message" not in step:
        raise InterchangeError(f"{where}.message is missing")
    text = text_of(step["message"], f"{where}.message") or (step.get("reasoning_content") or "")
    calls = step.get("tool_calls") or []
    if calls and source != "agent":
        raise InterchangeError(f"{where}.tool_calls: only agent steps call tools")
    native = [_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)]
    role = {"system": "system", "user": "user", "agent": "assistant"}[source]
    trains = role == "assistant" and _trains(step)
    turns = [
        Turn(role=role, content=text, loss=trains, kind="tool_call" if native else "text", tool_calls=native or None)
    ]
    names = {c["id"]: c["function"]["name"] for c in native}
    for i, result in enumerate(((step.get("observation") or {}).get("results")) or []):
        call_id = result.get("source_call_id")
        if call_id is not None and call_id not in names:
            raise InterchangeError(
                f"{where}.observation.results[{i}].source_call_id {call_id!r} is not a call of this step"
            )
        content = text_of(result.get("content") or "", f"{where}.observation.results[{i}].content")
        name = ((result.get("extra") or {}).get("name")) or names.get(call_id)
        turns.append(Turn(role="tool", content=content, kind="observation", tool_call_id=call_id, name=name))
    return turns


def _call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict) or not call.get("tool_call_id") or not call.get("function_name"):
        raise InterchangeError(f"{where}: a tool call needs tool_call_id and function_name")
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        raise InterchangeError(f"{where}.arguments must be an object")
    return {
        "id": call["tool_call_id"],
        "type": "function",
        "function": {"name": call["function_name"], "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def _trains(step: dict[str, Any]) -> bool:
    """The RFC's SFT exclusions, then our own mark."""
    if step.get("is_copied_context") or step.get("llm_call_count") == 0:
        return False
    return bool((step.get("extra") or {}).get("train", True))
