"""Writing `llm_calls` rows: one row per request key, every attempt's spend kept.

A new row for a key replaces the old one but adds the old row's attempts,
tokens and cost: a request failed, killed or asked again still shows what it
cost. A row already present with the same finished_at is the same call (a
journal replay after the flush had written it) and is skipped.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..store import Store

COLUMNS = (
    "request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
    "params", "messages", "response_schema", "response", "parsed", "finish_reason",
    "status", "error_kind", "error", "attempts", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "started_at", "finished_at", "batch_id",
)  # fmt: skip

# Known when a call starts (the journal's `start` line); the rest come with its answer.
START_COLUMNS = ("request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
                 "params", "messages", "response_schema", "started_at")  # fmt: skip
SUMMED = ("attempts", "prompt_tokens", "completion_tokens", "cost_usd")
_INDEX = {name: i for i, name in enumerate(COLUMNS)}


def _plus(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def merge_duplicates(rows: list[tuple]) -> list[tuple]:
    """One row per key (the last), carrying the spend of the earlier ones."""
    by_key: dict[str, tuple] = {}
    for row in rows:
        earlier = by_key.get(row[0])
        if earlier is not None:
            row = list(row)
            for name in SUMMED:
                row[_INDEX[name]] = _plus(earlier[_INDEX[name]], row[_INDEX[name]])
            row = tuple(row)
        by_key[row[0]] = row
    return list(by_key.values())


def _summed(name: str) -> str:
    if name == "attempts":
        return "coalesce(b.attempts, 0) + coalesce(o.attempts, 0)"
    return f"CASE WHEN o.{name} IS NULL THEN b.{name} WHEN b.{name} IS NULL THEN o.{name} ELSE b.{name} + o.{name} END"


_SELECTED = ", ".join(_summed(c) if c in SUMMED else f"b.{c}" for c in COLUMNS)
INSERT_SQL = (
    f"INSERT OR REPLACE INTO llm_calls ({', '.join(COLUMNS)}, cache_hits) "
    f"SELECT {_SELECTED}, coalesce(o.cache_hits, 0) FROM batch b "
    "LEFT JOIN llm_calls o ON o.request_hash = b.request_hash "
    "WHERE o.finished_at IS DISTINCT FROM b.finished_at"
)
ADD_LOST_SQL = (
    "UPDATE llm_calls SET attempts = coalesce(llm_calls.attempts, 0) + lost.attempts "
    "FROM lost WHERE llm_calls.request_hash = lost.request_hash"
)
INSERT_LOST_SQL = (
    f"INSERT INTO llm_calls ({', '.join(COLUMNS)}) SELECT {', '.join(COLUMNS)} FROM lost "
    "WHERE request_hash NOT IN (SELECT request_hash FROM llm_calls)"
)


def as_table(rows: list[tuple]) -> pa.Table:
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)})


def write_rows(store: Store, rows: list[tuple], lost: list[tuple] = ()) -> None:
    """Write finished calls' rows and, for attempts that never got an answer, add them to
    their key's row (or a row of their own, status error, error_kind interrupted); one transaction."""
    rows = merge_duplicates(rows)
    with store.arrow_view("batch", as_table(rows)), store.arrow_view("lost", as_table(list(lost))):
        with store.transaction() as con:
            if rows:
                con.execute(INSERT_SQL)
            if lost:
                con.execute(ADD_LOST_SQL)
                con.execute(INSERT_LOST_SQL)
