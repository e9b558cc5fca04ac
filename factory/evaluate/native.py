"""The evaluated player calling tools natively (`factory eval --tool-calls native`), as a model trained on
the native exports is served (factory/export/native.py).

The player is given the script's actions as `tools` (JSON-schema functions, the export's own) and the
native instruction (a system prompt, then the task and the opening observation); its reply is read for a
tool call in the form its model family writes one:

- Hermes / Qwen2.5 / Qwen3: `<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>` (also what
  factory.llm returns for a server that parsed the call itself, llm/transport.py);
- Llama 3.1 / 3.2: a JSON object `{"name": ..., "parameters": {...}}`, after `<|python_tag|>` or alone;
- Mistral: `[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`.

The first call is played; its result goes back as a `tool` message with the call's id, in the words the
training rows use. A reply with no readable call is a format error, answered by a user message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from factory.envs.text_game import observation_templates
from factory.envs.world_env import Action
from factory.export.native import action_tool, call
from factory.prompts import load_prompt, render_prompt
from factory.refine.narration import opening_observation
from factory.refine.script import Script

_HERMES = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(\[.*\])", re.S)
_LLAMA = re.compile(r"(?:<\|python_tag\|>)?\s*(\{.*\})", re.S)


def tools(script: Script) -> list[dict[str, Any]]:
    return [action_tool(action) for action in script.actions]


def first_messages(script: Script) -> list[dict[str, Any]]:
    user = render_prompt("export/native_refine_user", task=script.task, observation=opening_observation(script))
    return [
        {"role": "system", "content": load_prompt("export/native_refine_system")},
        {"role": "user", "content": user},
    ]


def parse_tool_call(reply: str) -> tuple[str, Action] | None:
    """(the text before the call, the first call) as any of the families above writes it; None: no call."""
    for pattern, read in ((_HERMES, _one), (_MISTRAL, _first_of_list), (_LLAMA, _one)):
        match = pattern.search(reply)
        if match is None:
            continue
        parsed = read(match.group(1))
        if parsed is not None:
            return reply[: match.start()].strip(), parsed
    return None


def _one(text: str) -> Action | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return Action(data["name"], arguments) if isinstance(arguments, dict) else None


def _first_of_list(text: str) -> Action | None:
    try:
        calls = json.loads(text)
    except ValueError:
        return None
    return _one(json.dumps(calls[0])) if isinstance(calls, list) and calls else None


def assistant_message(text: str, parsed: Action, index: int) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": [call(index, parsed.name, parsed.params)]}


def tool_message(index: int, name: str, said: str) -> dict[str, Any]:
    """The world's answer to call `index`, without the text form's `Observation:` label."""
    return {
        "role": "tool",
        "tool_call_id": f"call_{index}",
        "name": name,
        "content": said.removeprefix("Observation: "),
    }


def format_error_message() -> dict[str, Any]:
    return {"role": "user", "content": observation_templates()["format_native"]}
