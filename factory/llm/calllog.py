"""The `llm_calls` table: every call's record, and the cache built on it.

Rows are buffered and written in batches (one Arrow insert per batch, in a
transaction) a fraction of a second after they complete: a killed process
loses at most the calls of that last fraction, which a rerun then repeats.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..store import Store

COLUMNS = (
    "request_hash", "run_id", "stage", "provider", "model", "namespace", "sample_index",
    "params", "messages", "response_schema", "response", "parsed", "finish_reason",
    "status", "error_kind", "error", "attempts", "prompt_tokens", "completion_tokens",
    "cost_usd", "latency_s", "started_at", "finished_at",
)  # fmt: skip

CACHED_COLUMNS = ("response", "parsed", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s")


class CallLog:
    def __init__(self, store: Store, flush_rows: int = 512):
        self.store = store
        self.flush_rows = flush_rows
        self._rows: list[tuple] = []
        self._hits: Counter[str] = Counter()
        self._pending_ok: dict[str, dict[str, Any]] = {}
        self.ok_keys: set[str] = {r[0] for r in store.query("SELECT request_hash FROM llm_calls WHERE status = 'ok'")}

    def cached(self, key: str) -> dict[str, Any] | None:
        """The stored successful call for this key, or None."""
        if key not in self.ok_keys:
            return None
        if key in self._pending_ok:
            return self._pending_ok[key]
        rows = self.store.query(
            f"SELECT {', '.join(CACHED_COLUMNS)} FROM llm_calls WHERE request_hash = ?", [key]
        )
        return dict(zip(CACHED_COLUMNS, rows[0])) if rows else None

    def record(self, row: dict[str, Any]) -> None:
        self._rows.append(tuple(row[c] for c in COLUMNS))
        if row["status"] == "ok":
            self.ok_keys.add(row["request_hash"])
            self._pending_ok[row["request_hash"]] = {c: row[c] for c in CACHED_COLUMNS}
        if len(self._rows) >= self.flush_rows:
            self.flush()

    def hit(self, key: str) -> None:
        self._hits[key] += 1

    def flush(self) -> None:
        rows, self._rows = self._rows, []
        hits, self._hits = self._hits, Counter()
        if rows:
            columns = {name: [row[i] for row in rows] for i, name in enumerate(COLUMNS)}
            self.store.insert_rows("llm_calls", columns, replace=True)
            self._pending_ok.clear()
        if hits:
            import pyarrow as pa

            bumps = pa.table({"request_hash": list(hits), "n": list(hits.values())})
            with self.store.arrow_view("bumps", bumps), self.store.transaction() as con:
                con.execute(
                    "UPDATE llm_calls SET cache_hits = coalesce(cache_hits, 0) + bumps.n "
                    "FROM bumps WHERE llm_calls.request_hash = bumps.request_hash"
                )
