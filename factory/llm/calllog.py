"""The `llm_calls` table: every call's record, and the cache built on it.

Rows are buffered and written in batches (one Arrow insert per batch, in a
transaction) a fraction of a second after they complete: a killed process
loses at most the calls of that last fraction, which a rerun then repeats.
Flushes may run in a worker thread, so the event loop keeps serving replies
while DuckDB writes; a lock guards the buffers they share.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pyarrow as pa

from ..store import Store

COLUMNS = (
    "request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
    "params", "messages", "response_schema", "response", "parsed", "finish_reason",
    "status", "error_kind", "error", "attempts", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "started_at", "finished_at",
)  # fmt: skip

CACHED_COLUMNS = ("response", "parsed", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s")


class CallLog:
    def __init__(self, store: Store):
        self.store = store
        self._lock = threading.Lock()
        self._rows: list[tuple] = []
        self._hits: Counter[str] = Counter()
        # Successful rows not yet in DuckDB, so a cache lookup sees them too.
        self._pending_ok: dict[str, dict[str, Any]] = {}
        self.ok_keys: set[str] = {r[0] for r in store.query("SELECT request_hash FROM llm_calls WHERE status = 'ok'")}

    def cached(self, key: str) -> dict[str, Any] | None:
        """The stored successful call for this key, or None."""
        if key not in self.ok_keys:
            return None
        with self._lock:
            pending = self._pending_ok.get(key)
        if pending is not None:
            return pending
        rows = self.store.query(f"SELECT {', '.join(CACHED_COLUMNS)} FROM llm_calls WHERE request_hash = ?", [key])
        return dict(zip(CACHED_COLUMNS, rows[0])) if rows else None

    def record(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._rows.append(tuple(row[c] for c in COLUMNS))
            if row["status"] == "ok":
                self._pending_ok[row["request_hash"]] = {c: row[c] for c in CACHED_COLUMNS}
        if row["status"] == "ok":
            self.ok_keys.add(row["request_hash"])

    @property
    def backlog(self) -> int:
        return len(self._rows)

    def hit(self, key: str) -> None:
        with self._lock:
            self._hits[key] += 1

    def flush(self) -> None:
        """Write buffered rows and cache-hit counts (safe to call from a worker thread)."""
        with self._lock:
            rows, self._rows = self._rows, []
            hits, self._hits = self._hits, Counter()
        if rows:
            columns = {name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)}
            self.store.insert_rows("llm_calls", columns, replace=True)
            written = columns["request_hash"]
            with self._lock:
                for key in written:
                    self._pending_ok.pop(key, None)
        if hits:
            bumps = pa.table({"request_hash": list(hits), "n": list(hits.values())})
            with self.store.arrow_view("bumps", bumps), self.store.transaction() as con:
                con.execute(
                    "UPDATE llm_calls SET cache_hits = coalesce(cache_hits, 0) + bumps.n "
                    "FROM bumps WHERE llm_calls.request_hash = bumps.request_hash"
                )
