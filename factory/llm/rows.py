"""Writing `llm_calls` rows: one row per request key, every attempt's spend kept.

A new row for a key replaces the old one but adds the old row's attempts, tokens and cost: a
request failed, killed or asked again still shows what it cost. A row already present with the
same finished_at is the same call and is left as it is.

A call's attempts are in `llm_pending` from the moment the first one is sent until its row is
written (calllog.py). A process killed in between leaves them there; `settle_lost_calls` adds
them to the log (to the key's row, or as a row of their own with error_kind `interrupted`).
"""

from __future__ import annotations

import json
from typing import Any

from ..store import Store

COLUMNS = (
    "request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
    "params", "messages", "response_schema", "response", "parsed", "finish_reason",
    "status", "error_kind", "error", "attempts", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "started_at", "finished_at", "batch_id",
)  # fmt: skip

# Known when a call starts (kept in llm_pending while it is on the wire); the rest come with its answer.
START_COLUMNS = ("request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
                 "params", "messages", "response_schema", "started_at")  # fmt: skip
SUMMED = ("attempts", "prompt_tokens", "completion_tokens", "cost_usd")
LOST_ERROR = "the process ended before this attempt's answer came back or was saved"


def _updated(name: str) -> str:
    """The column's value when the key already has a row: the new one, or for spend both added."""
    if name in SUMMED:
        return f"{name} = CASE WHEN llm_calls.{name} IS NULL THEN excluded.{name} ELSE llm_calls.{name} + coalesce(excluded.{name}, 0) END"
    return f"{name} = excluded.{name}"


# cache_hits is not set: a new row starts at 0, an old row keeps its count.
UPSERT_SQL = (
    f"INSERT INTO llm_calls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
    f"ON CONFLICT (request_hash) DO UPDATE SET {', '.join(_updated(c) for c in COLUMNS if c != 'request_hash')} "
    "WHERE llm_calls.finished_at IS NOT excluded.finished_at"
)
PENDING_SQL = (
    "INSERT INTO llm_pending VALUES (?, ?, ?, 1, ?) ON CONFLICT (request_hash) "
    "DO UPDATE SET attempts = llm_pending.attempts + 1, updated_at = excluded.updated_at"
)
DONE_SQL = "DELETE FROM llm_pending WHERE request_hash = ?"


def answer_params(row: dict[str, Any]) -> list[Any]:
    """UPSERT_SQL's parameters for a finished call's row (DONE_SQL then takes its attempts out of llm_pending)."""
    return [row.get(c) for c in COLUMNS]


def lost_calls(store: Store) -> list[tuple[str, dict[str, Any], int]]:
    """(key, fixed columns, attempts) of pending calls whose run is no longer running."""
    rows = store.lookup(
        "SELECT p.request_hash, p.fixed, p.attempts FROM llm_pending p LEFT JOIN runs r ON r.run_id = p.run_id "
        "WHERE r.status IS NULL OR r.status != 'running'"
    )
    return [(key, _fixed(fixed), attempts or 0) for key, fixed, attempts in rows]


def _fixed(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def settle_lost_calls(store: Store) -> int:
    """Add the attempts of calls a dead process left on the wire to the log; the number of attempts."""
    lost = lost_calls(store)
    if not lost:
        return 0
    with store.transaction() as con:
        for key, fixed, attempts in lost:
            row = {**{c: fixed.get(c) for c in START_COLUMNS}, "request_hash": key, "status": "error",
                   "error_kind": "interrupted", "error": LOST_ERROR, "attempts": attempts}  # fmt: skip
            con.execute(
                "UPDATE llm_calls SET attempts = coalesce(attempts, 0) + ? WHERE request_hash = ?", [attempts, key]
            )
            con.execute(
                f"INSERT OR IGNORE INTO llm_calls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                [row.get(c) for c in COLUMNS],
            )
            con.execute(DONE_SQL, [key])
    return sum(attempts for _, _, attempts in lost)
