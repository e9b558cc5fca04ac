"""The `atif` and `adp` exports: every kept row as one interchange document a line (JSON lines always:
both formats nest per-row shapes no Arrow column can hold). Everything travels: the observation after the
last assistant message too, and the training flags (interchange/atif.py, adp.py say where)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterator

from ..export.native import native_row
from ..export.openai_format import native_sql
from ..export.stream import write_stream
from ..store import Store
from .adp import to_adp
from .atif import to_atif

WRITERS: dict[str, Callable[..., dict[str, Any]]] = {"atif": to_atif, "adp": to_adp}


def interchange_documents(store: Store, selection: str, split: str, kind: str, skipped: Counter) -> Iterator[dict]:
    query = f"SELECT * EXCLUDE (split) FROM ({native_sql(selection)}) WHERE split = '{split}'"
    for batch in store.arrow_batches(query):
        for row in batch.to_pylist():
            native = native_row(row, keep_trailing=True)
            if native.messages is None:
                skipped[native.reason or "no native form"] += 1
                continue
            yield WRITERS[kind](row["trajectory_id"], row["source"], native.messages, native.tools)


def interchange_writer(store: Store, name: str, selection: str, options, settings: dict):
    skipped: Counter = settings.setdefault("skipped", Counter())
    lines = options.model_copy(update={"file_type": "jsonl"})
    return lambda split, folder: write_stream(
        interchange_documents(store, selection, split, name, skipped), split, folder, lines, None
    )
