"""Tool calls a server parsed out of a reply, as the text a Hermes-style model writes (llm/transport.py)."""

from __future__ import annotations

from typing import Any

import orjson


def with_tool_calls(content: Any, calls: Any) -> Any:
    """A reply whose calls a server parsed out (vLLM with a tool-call parser, an API's native tool calling) as the
    text a Hermes-style model writes: the content, then `<tool_call>\n{"name", "arguments"}\n</tool_call>` per
    call, so one reader parses a call whichever side parsed it (factory/evaluate/native.py)."""
    if not isinstance(calls, list) or not calls:
        return content
    blocks = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and function.get("name"):
            arguments = function.get("arguments")
            try:
                arguments = orjson.loads(arguments) if isinstance(arguments, str) and arguments.strip() else arguments
            except orjson.JSONDecodeError:
                pass
            shown = orjson.dumps({"name": function["name"], "arguments": arguments or {}}).decode()
            blocks.append(f"<tool_call>\n{shown}\n</tool_call>")
    return "\n".join(([content] if content else []) + blocks) if blocks else content
