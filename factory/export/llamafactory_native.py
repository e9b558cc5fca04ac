"""The `llamafactory` export with native tool calls (`tool_calls: native`): sharegpt `function_call` and
`observation` turns and a `tools` column, as LLaMA-Factory's function-calling path reads them.

From each row's native form (native.py): the system prompt a `system` turn, the task `human`, an assistant
message with a call a `function_call` turn, a tool result an `observation` turn, a final answer `gpt`.
LLaMA-Factory parses a `function_call` value as JSON, one `{"name", "arguments"}` object with `arguments` an
object; reasoning before the call goes in the form `text\\n<tool_call>{...}</tool_call>`, which its `qwen`
template renders exactly as Qwen2.5's own template does (text, newline, the call). `tools` is the JSON
text of the function list (its ToolFormatter parses a string).

LLaMA-Factory trains every `gpt` and `function_call` turn of a sample and drops any per-turn flag, so the
samples carry the masks (mode `last`, as llamafactory.py explains): one sample per trained assistant turn,
the conversation up to it, trained with `mask_history: true`. That holds for refine and coa rows alike,
so a mixed export trains both under one config.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterator

import pyarrow as pa

from ..store import Store
from .native import arguments_object
from .openai_format import METADATA_TYPES, native_rows

TURN = pa.struct([("from", pa.string()), ("value", pa.string()), ("loss", pa.bool_())])
SCHEMA = pa.schema([("id", pa.string()), ("turn", pa.int32()), ("conversations", pa.list_(TURN)),
                    ("tools", pa.string()), *METADATA_TYPES.items()])  # fmt: skip


def sharegpt_turn(message: dict[str, Any]) -> dict[str, str]:
    role, content = message["role"], message.get("content") or ""
    if role == "assistant" and message.get("tool_calls"):
        calls = [
            {"name": c["function"]["name"], "arguments": arguments_object(c["function"]["arguments"])}
            for c in message["tool_calls"]
        ]
        shown = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
        return {"from": "function_call", "value": f"{content}\n<tool_call>{shown}</tool_call>" if content else shown}
    sides = {"system": "system", "user": "human", "assistant": "gpt", "tool": "observation"}
    return {"from": sides[role], "value": content}


def native_samples(store: Store, selection: str, split: str, skipped: Counter) -> Iterator[dict[str, Any]]:
    """One sample per trained assistant turn of each row, the conversation up to it; only it has loss."""
    for row in native_rows(store, selection, split, True, skipped):
        turns = [sharegpt_turn(m) for m in row["messages"]]
        trained = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant" and m.get("weight")]
        for position in trained:
            conversations = [{**t, "loss": i == position} for i, t in enumerate(turns[: position + 1])]
            yield {"id": row["id"], "turn": position, "conversations": conversations, "tools": row["tools"],
                   **{key: row[key] for key in METADATA_TYPES}}  # fmt: skip
