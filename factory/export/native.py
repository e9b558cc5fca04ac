"""Trajectories as today's tool-calling models speak them: OpenAI `messages` with `tool_calls`, and `tools`.

AgentRefine and AFM trained on actions written as text (`Action: take(item=x)`, `<web_search>...`); models
fine-tuned now call tools natively, and their trainers and servers parse only that. A stored row becomes:

- `tools`: JSON-schema functions. refine: one per action of the row's script, its typed parameters with
  their valid values as `enum`; coa: the tools the row calls (`coa/tools/registry.py`), one string
  parameter each (`ToolSpec.parameter`: query, url, code).
- `messages`: the instruction (refine: a system prompt and the task with its opening observation;
  coa: a system prompt and the question); each step an assistant message whose `content` is its
  reasoning (refine: the thought; coa: the AFM blocks before the call, think/plan/reflection as written)
  with one `tool_calls` entry (`arguments` a JSON string, as OpenAI writes it), then a `tool` message
  with the matching `tool_call_id` holding the observation; coa's final answer an assistant message.
- `weight` on assistant messages, 1 or 0, from the stored turn's own flag (a refine mistake stays in
  context, 0), so every export's masks are the stored ones; tool messages never train.

A trailing observation (refine's last DM line) is dropped: nothing answers it, and nothing after it trains.
Hugging Face chat templates take `arguments` as a dict (factory/mask/rows.py parses it). Rows this cannot convert (no steps, a script that does not parse, an AFM completion whose
blocks do not read cleanly) give None with a reason, counted by the export.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..coa.afm.blocks import markup, scan
from ..coa.tools.registry import spec, tool_tags
from ..prompts import load_prompt, render_prompt
from ..refine.narration import opening_observation
from ..refine.script import Action, Script
from ..refine.values import valid_typed
from ..tasks.parsing import TASK_MARKER

JSON_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean"}


@dataclass
class Native:
    messages: list[dict[str, Any]] | None  # None: the row cannot be converted (see `reason`)
    tools: list[dict[str, Any]]
    reason: str | None = None


def function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI tool: a function whose parameters are a JSON schema, every parameter required."""
    parameters = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def arguments_object(value: Any) -> dict[str, Any]:
    """A call's `arguments` as an object: OpenAI writes them as JSON text, chat templates and ATIF/ADP want one."""
    parsed = json.loads(value) if isinstance(value, str) and value.strip() else value
    return parsed if isinstance(parsed, dict) else {}


def call(index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


# --- refine ---------------------------------------------------------------------------------------------------


def action_tool(action: Action) -> dict[str, Any]:
    properties = {}
    for param in action.parameters:
        schema: dict[str, Any] = {"type": JSON_TYPES[param.type], "enum": valid_typed(param)}
        if param.description:
            schema["description"] = param.description
        properties[param.name] = schema
    return function(action.name, action.description, properties)


def refine_native(turns: list[dict], steps: list[dict], script: Script) -> Native:
    """The player's steps as tool calls on the script's actions; weights from the stored turns."""
    tools = [action_tool(action) for action in script.actions]
    assistant = [t for t in turns if t.get("role") == "assistant"]
    if len(assistant) != len(steps):
        return Native(None, tools, "refine turns and steps disagree")
    user = render_prompt("export/native_refine_user", task=script.task, observation=opening_observation(script))
    messages = [
        {"role": "system", "content": load_prompt("export/native_refine_system")},
        {"role": "user", "content": user},
    ]
    for index, (turn, step) in enumerate(zip(assistant, steps), start=1):
        action = step["action"]
        messages.append(
            {
                "role": "assistant",
                "content": step.get("thought", ""),
                "tool_calls": [call(index, action["name"], action["params"])],
                "weight": _weight(turn),
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{index}", "name": action["name"],
                         "content": step.get("observation", "")})  # fmt: skip
    return Native(messages, tools)


def _weight(turn: dict) -> int:
    """The stored turn's own training flag: it trains, and it is not a recorded mistake."""
    return int(bool(turn.get("loss")) and not turn.get("error"))


# --- coa ------------------------------------------------------------------------------------------------------


def coa_native(prompt: str, completion: str) -> Native:
    """The AFM completion's tool blocks as tool calls, its observations as tool messages."""
    found = scan(completion)
    if found.violations:
        return Native(None, [], f"AFM blocks do not read cleanly ({found.violations[0].rule})")
    used = [b.tag for b in found.blocks if b.tag in tool_tags()]
    tools = [_coa_tool(name) for name in dict.fromkeys(used)]
    question = prompt.rsplit(TASK_MARKER, 1)[-1].strip()
    messages = [
        {"role": "system", "content": load_prompt("export/native_coa_system")},
        {"role": "user", "content": question},
    ]
    reasoning: list[str] = []
    index = 0
    for block in found.blocks:
        if block.tag in tool_tags():
            index += 1
            arguments = {spec(block.tag).parameter: block.text.strip()}
            messages.append({"role": "assistant", "content": "\n".join(reasoning),
                             "tool_calls": [call(index, block.tag, arguments)], "weight": 1})  # fmt: skip
            reasoning = []
        elif block.tag == "observation":
            if not index or messages[-1]["role"] != "assistant":
                return Native(None, tools, "an observation no tool call asked for")
            messages.append({"role": "tool", "tool_call_id": f"call_{index}", "name": messages[-1]["tool_calls"][0]
                             ["function"]["name"], "content": block.text.strip("\n")})  # fmt: skip
        elif block.tag == "answer":
            messages.append({"role": "assistant", "content": "\n".join(reasoning + [block.text.strip()]), "weight": 1})
            reasoning = []
        else:
            reasoning.append(markup(block.tag, block.text))
    if reasoning:
        messages.append({"role": "assistant", "content": "\n".join(reasoning), "weight": 1})
    return Native(messages, tools)


def _coa_tool(name: str) -> dict[str, Any]:
    tool = spec(name)
    return function(
        name,
        load_prompt(f"coa/afm_tools/{name}").strip(),
        {tool.parameter: {"type": "string", "description": tool.argument}},
    )


# --- both -----------------------------------------------------------------------------------------------------


def native_row(row: dict[str, Any], keep_trailing: bool = False) -> Native:
    """A selection row (with `steps` and `script` joined for refine, `tools` for imported rows) as native
    messages and tools. `keep_trailing`: keep the observations after the last assistant message (an
    interchange file keeps everything; a training row has no use for them)."""
    native = _converted(row)
    if native.messages is not None and not keep_trailing:
        native.messages = _trimmed(native.messages)
    return native


def _converted(row: dict[str, Any]) -> Native:
    if row.get("tools") is not None:  # an imported native trajectory: its turns hold the calls
        try:
            return imported_native(json.loads(row["turns"] or "[]"), json.loads(row["tools"]))
        except ValueError as exc:
            return Native(None, [], f"stored turns or tools do not parse ({str(exc).splitlines()[0]})")
    if row.get("source") == "refine" and row.get("steps") and row.get("script"):
        try:
            script = Script.model_validate_json(row["script"])
            turns, steps = json.loads(row["turns"] or "[]"), json.loads(row["steps"])
        except ValueError as exc:
            return Native(None, [], f"stored script or steps do not parse ({str(exc).splitlines()[0]})")
        return refine_native(turns, steps, script)
    if isinstance(row.get("prompt"), str) and isinstance(row.get("completion"), str):
        return coa_native(row["prompt"], row["completion"])
    return Native(None, [], "no steps and script (refine), AFM prompt and completion (coa) or native turns")


def imported_native(turns: list[dict], tools: list[dict]) -> Native:
    """Turns stored in native form (factory/interchange): each as its message, `weight` from its own flag."""
    messages = []
    for turn in turns:
        message = {"role": turn["role"], "content": turn.get("content", "")}
        message.update({k: turn[k] for k in ("tool_calls", "tool_call_id", "name") if turn.get(k) is not None})
        if turn["role"] == "assistant":
            message["weight"] = _weight(turn)
        messages.append(message)
    return Native(messages, tools)


def _trimmed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without the trailing messages no assistant answers (refine's last DM line)."""
    while messages and messages[-1]["role"] != "assistant":
        messages.pop()
    return messages
