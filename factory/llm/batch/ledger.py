"""The run store's record of batches: `llm_batches` (one row per batch) and `llm_batch_requests`
(which custom ids each batch holds).

A batch is recorded the moment the provider accepts it, before any poll, so a process killed while
it runs leaves its id behind: the next run follows that batch (live_requests) instead of paying for
its requests again. Writes go through the store's lock like the call log's, from a worker thread.
"""

from __future__ import annotations

import asyncio

from ...store import Store, utcnow
from .protocol import BatchState

REFUSED = "failed"  # a batch the provider refused as a whole: it holds no answers
GONE = "gone"  # our own state: the provider answers 404 for the batch (deleted, or past its retention)


class BatchLedger:
    def __init__(self, store: Store | None, protocol: str, base_url: str):
        self.store, self.protocol, self.base_url = store, protocol, base_url

    async def live_requests(self) -> dict[str, str]:
        """custom id -> the batch (not yet downloaded, at this endpoint) that holds it."""
        if self.store is None:
            return {}
        rows = await asyncio.to_thread(
            self.store.query,
            "SELECT r.custom_id, b.batch_id FROM llm_batch_requests r JOIN llm_batches b USING (batch_id) "
            "WHERE b.downloaded_at IS NULL AND b.provider = ? AND b.base_url = ? AND b.state NOT IN (?, ?)"
            " ORDER BY b.created_at",
            [self.protocol, self.base_url, REFUSED, GONE],
        )
        return dict(rows)

    async def created(self, state: BatchState, requests: list[tuple[str, str | None]]) -> None:
        """The provider accepted this batch of (custom id, request hash)."""
        if self.store is None:
            return
        await asyncio.to_thread(self._write_created, state, requests)

    def _write_created(self, state: BatchState, requests: list[tuple[str, str | None]]) -> None:
        """The batch and its requests in one transaction: a kill leaves both or neither."""
        now = utcnow()
        with self.store.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO llm_batches (batch_id, provider, base_url, state, requests, input_file_id, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [state.batch_id, self.protocol, self.base_url, state.status, len(requests),
                 state.files.get("input_file_id"), now, now],
            )  # fmt: skip
            con.executemany(
                "INSERT OR REPLACE INTO llm_batch_requests VALUES (?, ?, ?)",
                [(state.batch_id, custom_id, key) for custom_id, key in requests],
            )

    async def updated(self, state: BatchState, downloaded: bool = False) -> None:
        if self.store is None:
            return
        counts = state.counts
        done = sum(counts.get(k, 0) for k in ("completed", "succeeded"))
        failed = sum(counts.get(k, 0) for k in ("failed", "errored", "expired", "canceled"))
        await asyncio.to_thread(
            self.store.execute,
            "UPDATE llm_batches SET state = ?, completed = ?, failed = ?, output_file_id = ?, error_file_id = ?, "
            "results_url = ?, error = ?, updated_at = ?, downloaded_at = ? WHERE batch_id = ?",
            [state.status, done, failed, state.files.get("output_file_id"), state.files.get("error_file_id"),
             state.files.get("results_url"), state.error, utcnow(), utcnow() if downloaded else None,
             state.batch_id],
        )  # fmt: skip

    async def gone(self, batch_id: str, error: str) -> None:
        if self.store is not None:
            await asyncio.to_thread(
                self.store.execute,
                "UPDATE llm_batches SET state = ?, error = ?, updated_at = ? WHERE batch_id = ?",
                [GONE, error, utcnow(), batch_id],
            )
