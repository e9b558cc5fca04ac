"""The `openai` export: native tool calling in OpenAI's fine-tuning chat format (export/native.py).

One row per trajectory: `messages` (assistant `tool_calls` with `arguments` as JSON text, `tool` messages
with `tool_call_id` and `name`, `weight` 1/0 on assistant messages, and on tool messages too with
`--observations train`: observations.py) and `tools` (JSON-schema functions).
In JSON lines `tools` is a list, exactly what OpenAI's fine-tuning upload takes; in Parquet it is the
same list as JSON text, since one Arrow column cannot hold functions whose parameters differ from row
to row (TRL and LLaMA-Factory both read `tools` as JSON text). Rows the conversion cannot read are
left out and counted by reason.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterator

import pyarrow as pa

from ..store import Store
from .native import native_row
from .observations import weigh_observations

CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                  ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(CALL)),
                     ("tool_call_id", pa.string()), ("name", pa.string()), ("weight", pa.int8())])  # fmt: skip
METADATA_TYPES = {"source": pa.string(), "task_id": pa.string(), "script_id": pa.string(), "weight": pa.float64()}
SCHEMA = pa.schema(
    [("id", pa.string()), ("messages", pa.list_(MESSAGE)), ("tools", pa.string()), *METADATA_TYPES.items()]
)


def native_sql(selection: str) -> str:
    """The selection with what the conversion needs beside it: refine's steps and its script."""
    return f"""
        SELECT s.*, t.steps, sc.script FROM ({selection}) s
        LEFT JOIN trajectories t USING (trajectory_id)
        LEFT JOIN (SELECT script_id, any_value(script) AS script FROM scripts GROUP BY 1) sc
               ON sc.script_id = s.script_id"""


def native_rows(
    store: Store, selection: str, split: str, tools_as_text: bool, skipped: Counter, observations: str = "mask"
) -> Iterator[dict]:
    """The split's rows in the native form; rows the conversion cannot read are counted in `skipped`.
    `observations="train"`: each tool message carries `weight` 1 too (observations.py)."""
    query = f"SELECT * EXCLUDE (split) FROM ({native_sql(selection)}) WHERE split = '{split}'"
    for batch in store.arrow_batches(query):
        for row in batch.to_pylist():
            native = native_row(row)
            if native.messages is None or not any(m.get("weight") for m in native.messages):
                skipped[native.reason or "no assistant message trains"] += 1
                continue
            if observations == "train":
                weigh_observations(native.messages)
            tools: Any = json.dumps(native.tools, ensure_ascii=False) if tools_as_text else native.tools
            yield {"id": row["trajectory_id"], "messages": native.messages, "tools": tools,
                   **{key: row[key] for key in METADATA_TYPES}}  # fmt: skip
