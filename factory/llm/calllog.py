"""The `llm_calls` table: every call's record, and the cache built on it.

Each answer is committed when it comes back, before its caller gets it, and each HTTP attempt as it
leaves (`llm_pending`), so a killed process loses nothing it was answered and every attempt is counted
(rows.py settles what a dead process left on the wire). The writes of one event-loop turn share one
commit (group_commit.py). A failed write raises StoreWriteError, which stops every client on the store
(keeper.py).

Clients on one store share one CallLog (CallLog.open / release): one cache, one spend figure,
and a write failure that stops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from typing import Any

import orjson

from ..errors import FactoryError, StoreWriteError
from ..store import Store, utcnow
from ..store.errors import write_cause
from ..store.values import sql_value
from .group_commit import GroupCommit
from .rows import DONE_SQL, PENDING_SQL, UPSERT_SQL, answer_params, settle_lost_calls

CACHED_COLUMNS = ("response", "parsed", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s")
HIT_SQL = "UPDATE llm_calls SET cache_hits = coalesce(cache_hits, 0) + 1 WHERE request_hash = ?"
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
        self.flush()
        with _SHARED_LOCK:
            self.users -= 1
            if self.users <= 0 and _SHARED.get(id(self.store)) is self:
                del _SHARED[id(self.store)]

    def __init__(self, store: Store):
        self.store = store
        self.users = 0
        self.failure: StoreWriteError | None = None  # the first write that failed: every client stops
        self._started: dict[str, tuple[Any, str]] = {}  # key -> (run_id, fixed columns as JSON) until answered
        self.writes = GroupCommit(self._commit, self._failed)
        store.reserve.keep()  # disk set aside for the answers on the wire when the disk fills (reserve.py)
        self.lost_attempts = self._write(settle_lost_calls, store)
        self.ok_keys: set[str] = {r[0] for r in store.lookup("SELECT request_hash FROM llm_calls WHERE status = 'ok'")}
        self.spent_usd = float(store.lookup("SELECT coalesce(sum(cost_usd), 0) FROM llm_calls")[0][0])

    def write_error(self, exc: BaseException) -> StoreWriteError:
        cause = write_cause(self.store.path, exc)
        if isinstance(exc, StoreWriteError):  # the store's own line: its cause, without its advice
            cause = str(exc).split(": ", 1)[-1].split("; free space", 1)[0]
        return StoreWriteError(
            f"cannot write the call log to {self.store.path}: {cause}; every answer already received is kept; "
            "free space and run the same command again"
        )

    def _write(self, write, *args: Any) -> Any:
        """Do the write; StoreWriteError if it failed. A write the full disk refused is tried once more
        in the space its failure freed (the store's reserve): kept, though the batch still stops."""
        had_reserve = self.store.reserve.held
        try:
            return write(*args)
        except (sqlite3.Error, OSError, FactoryError) as exc:  # FactoryError: the store named it
            failure = self.write_error(exc)
        if had_reserve and not self.store.reserve.held:  # this failure freed the reserve
            with contextlib.suppress(sqlite3.Error, OSError, FactoryError):
                write(*args)
        raise failure

    def _commit(self, tables: tuple[str, ...], statements: list[tuple[str, list[Any]]]) -> None:
        self._write(self.store.commit, tables, statements)

    def _failed(self, failure: StoreWriteError) -> None:
        if self.failure is None:
            self.failure = failure

    def flush(self) -> None:
        """Commit the writes this event loop's turn has queued (all of them, outside a loop)."""
        self.writes.flush()

    def cached(self, key: str) -> dict[str, Any] | None:
        """The stored successful call for this key, or None."""
        if key not in self.ok_keys:
            return None
        if self.writes.pending():  # its answer may be waiting for the turn's commit
            self.flush()
        rows = self.store.lookup(f"SELECT {', '.join(CACHED_COLUMNS)} FROM llm_calls WHERE request_hash = ?", [key])
        return dict(zip(CACHED_COLUMNS, rows[0])) if rows else None

    def begin(self, key: str, fixed: dict[str, Any]) -> None:
        """A call for `key` starts: its fixed columns are written with its first attempt."""
        self._started[key] = (fixed.get("run_id"), orjson.dumps({k: sql_value(v) for k, v in fixed.items()}).decode())

    def attempt(self, key: str, number: int) -> asyncio.Future | None:
        """An HTTP attempt is about to be sent: queued for this turn's commit, which the request waits
        for (the future), so it is counted even if no answer comes."""
        run_id, fixed = self._started.get(key, (None, None))
        return self.writes.add(("llm_pending",), [(PENDING_SQL, [key, run_id, fixed, utcnow()])], wait=True)

    def record(self, row: dict[str, Any]) -> asyncio.Future | None:
        """Queue a finished call's row for this turn's commit; a future done once it is committed
        (None outside an event loop: committed now, raising StoreWriteError)."""
        key = row["request_hash"]
        done = self.writes.add(
            ("llm_calls", "llm_pending"), [(UPSERT_SQL, answer_params(row)), (DONE_SQL, [key])], wait=True
        )
        self._started.pop(key, None)
        self.spent_usd += row["cost_usd"] or 0.0  # this call's own cost: the spend cap reads it
        if row["status"] == "ok":
            self.ok_keys.add(key)
        return done

    def hit(self, key: str) -> None:
        self.writes.add(("llm_calls",), [(HIT_SQL, [key])])
