"""The `llm_calls` table: every call's record, and the cache built on it.

Rows are buffered and written in batches (one Arrow insert per batch, in a
transaction) a fraction of a second after they complete. Each call is also in
the call journal (journal.py) the moment it starts, tries and ends, so a killed
process loses nothing it was answered and every attempt is counted: the next
open replays the journal (replay.py). Flushes may run in a worker thread, so the
event loop keeps serving replies while DuckDB writes; a lock guards the buffers
they share. A failed flush keeps its rows and raises StoreWriteError.

Clients on one store share one CallLog (CallLog.open / release): one journal
file, one cache view, and a write failure that stops them all.

One row per request key: a new call for a key replaces its row, adding the old
row's attempts, tokens and cost, so the log counts every attempt ever paid for.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import FactoryError, StoreWriteError
from ..store import Store
from .journal import Journal, journal_path
from .replay import replay_journal
from .rows import COLUMNS, START_COLUMNS, write_rows

CACHED_COLUMNS = ("response", "parsed", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s")
ANSWER_COLUMNS = tuple(c for c in COLUMNS if c not in START_COLUMNS or c in ("request_hash", "params"))
_SHARED: dict[int, "CallLog"] = {}  # id(store) -> its open call log
_SHARED_LOCK = threading.Lock()


class CallLog:
    @classmethod
    def open(cls, store: Store) -> "CallLog":
        """The store's call log, shared by every client on it; release() when done."""
        with _SHARED_LOCK:
            log = _SHARED.get(id(store))
            if log is None or log.store is not store:
                log = _SHARED[id(store)] = cls(store)
            log.users += 1
            return log

    def release(self) -> None:
        """One client is done; the last one closes the journal (after its final flush)."""
        with _SHARED_LOCK:
            self.users -= 1
            if self.users > 0:
                return
            if _SHARED.get(id(self.store)) is self:
                del _SHARED[id(self.store)]
        self.close()

    def __init__(self, store: Store):
        self.store = store
        self.journal_path = journal_path(store.path)
        try:
            self.replayed = replay_journal(store, self.journal_path)
        except (duckdb.Error, OSError, FactoryError) as exc:  # FactoryError: the store named it
            raise self.write_error(exc) from None
        self.journal = Journal(self.journal_path)
        self.users = 0
        self.failure: StoreWriteError | None = None  # the first write that failed: every client stops
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time: a row is written once
        self._rows: list[tuple] = []
        self._hits: Counter[str] = Counter()
        # Successful rows not yet in DuckDB, so a cache lookup sees them too.
        self._pending_ok: dict[str, dict[str, Any]] = {}
        self.ok_keys: set[str] = {r[0] for r in store.query("SELECT request_hash FROM llm_calls WHERE status = 'ok'")}
        self.spent_usd = float(store.query("SELECT coalesce(sum(cost_usd), 0) FROM llm_calls")[0][0])

    def write_error(self, exc: BaseException) -> StoreWriteError:
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return StoreWriteError(
            f"cannot write the call log to {self.store.path}: {cause}; answered calls are kept in "
            f"{self.journal_path}; free space and run the same command again"
        )

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

    def begin(self, key: str, fixed: dict[str, Any]) -> None:
        """A call for `key` starts: its fixed columns go to the journal (raises StoreWriteError)."""
        self.journal.write(key, {"k": key, "e": "start", "row": fixed})

    def attempt(self, key: str, number: int) -> None:
        """An HTTP attempt is about to be sent: counted even if no answer ever comes back."""
        self.journal.write(key, {"k": key, "e": "try", "n": number})

    def record(self, row: dict[str, Any]) -> None:
        """Buffer a finished call's row and journal it (raises StoreWriteError, the row kept in memory)."""
        key = row["request_hash"]
        with self._lock:
            self._rows.append(tuple(row[c] for c in COLUMNS))
            self.spent_usd += row["cost_usd"] or 0.0  # this call's own cost: the spend cap reads it
            if row["status"] == "ok":
                self._pending_ok[key] = {c: row[c] for c in CACHED_COLUMNS}
                self.ok_keys.add(key)
            answer = {"k": key, "e": "answer", "row": {c: row[c] for c in ANSWER_COLUMNS}}
            self.journal.write(key, answer, answer=True)

    @property
    def backlog(self) -> int:
        return len(self._rows)

    def hit(self, key: str) -> None:
        with self._lock:
            self._hits[key] += 1

    def flush(self) -> None:
        """Write buffered rows and cache-hit counts (safe to call from a worker thread).
        The rows leave the buffer only once DuckDB has them; else StoreWriteError."""
        with self._flush_lock:
            with self._lock:
                rows, hits = list(self._rows), Counter(self._hits)
                marks = self.journal.marks([row[0] for row in rows])
            if rows:
                self._write(lambda: write_rows(self.store, rows))
                with self._lock:
                    del self._rows[: len(rows)]  # rows only ever join at the end
                    for row in rows:
                        self._pending_ok.pop(row[0], None)
                self.journal.settled(marks)
            if hits:
                self._write(lambda: self._bump_hits(hits))
                with self._lock:
                    self._hits.subtract(hits)
                    self._hits = +self._hits  # drop the counts now written

    def _write(self, write) -> None:
        try:
            write()
        except (duckdb.Error, OSError, FactoryError) as exc:  # FactoryError: the store named it
            raise self.write_error(exc) from None

    def _bump_hits(self, hits: Counter[str]) -> None:
        bumps = pa.table({"request_hash": list(hits), "n": list(hits.values())})
        with self.store.arrow_view("bumps", bumps), self.store.transaction() as con:
            con.execute(
                "UPDATE llm_calls SET cache_hits = coalesce(cache_hits, 0) + bumps.n "
                "FROM bumps WHERE llm_calls.request_hash = bumps.request_hash"
            )

    def close(self) -> None:
        """After the last flush: the journal is emptied when DuckDB holds all it said."""
        self.journal.close()
