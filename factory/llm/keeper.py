"""The client's side of the call log: journal each call as it happens, flush
DuckDB in the background, and stop the client at the first write that fails.

A store that cannot be written (a full disk) is not one request's failure: a
batch that went on would pay for answers it cannot keep. So the first failed
write is kept as `failure`, every later call and attempt raises it, and close()
raises it once calls already on the wire have come back into the journal.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import StoreWriteError
from ..store import Store
from .calllog import CallLog
from .many import mark_retrieved

FLUSH_EVERY_S = 0.25


class LogKeeper:
    def __init__(self) -> None:
        self.log: CallLog | None = None
        self.failure: StoreWriteError | None = None
        self._flusher: asyncio.Task | None = None
        self.closing = False  # the batch is ending on an error: nothing new is sent
        self.on_wire: set[str] = set()  # request keys with an attempt sent and no row recorded yet

    def open(self, store: Store | None) -> None:
        """Open the call log (replaying its journal) and start the background flush."""
        if store is not None:
            self.log = CallLog.open(store)
            self._flusher = asyncio.create_task(self._flush_periodically())

    def check(self) -> None:
        """Raise StoreWriteError once the call log could not be written."""
        if self.failure is None and self.log is not None:
            self.failure = self.log.failure  # another client on this store failed: stop too
        if self.failure is not None:
            _quiet_current_task()
            raise StoreWriteError(str(self.failure))

    def _fail(self, exc: StoreWriteError) -> None:
        if self.failure is None:
            self.failure = exc
        if self.log is not None and self.log.failure is None:
            self.log.failure = exc

    def _journaled(self, write, *args: Any) -> None:
        try:
            write(*args)
        except StoreWriteError as exc:
            self._fail(exc)
            _quiet_current_task()
            raise

    def begin(self, key: str, fixed: dict[str, Any]) -> None:
        if self.log is not None:
            self._journaled(self.log.begin, key, fixed)

    def check_can_send(self) -> None:
        """Raise StoreWriteError after a failure; end the calling task (CancelledError) while closing,
        so a batch's leftover workers neither send nor record a failure for their item."""
        self.check()
        if self.closing:
            raise asyncio.CancelledError()

    def before_attempt(self, key: str, number: int, journal: bool = True) -> None:
        """The sender's hook: nothing more is sent after a failure; the attempt is journaled here
        when the transport cannot say when it left (`journal`), else by attempt_sent."""
        self.check_can_send()
        if journal:
            self.attempt_sent(key, number)

    def attempt_sent(self, key: str, number: int) -> None:
        """The request is on the wire: journal it now, so a kill from here on still counts it."""
        self.on_wire.add(key)  # until its row is recorded: a call cancelled meanwhile is logged as cancelled
        if self.log is not None:
            self._journaled(self.log.attempt, key, number)

    def record(self, row: dict[str, Any]) -> None:
        self.on_wire.discard(row.get("request_hash"))
        if self.log is not None:
            self._journaled(self.log.record, row)

    async def _flush_periodically(self) -> None:
        """Write the call log from a worker thread, so replies keep flowing meanwhile."""
        while True:
            await asyncio.sleep(FLUSH_EVERY_S)
            if self.log.backlog:
                try:
                    await asyncio.to_thread(self.log.flush)
                except Exception as exc:  # never die silently: a store we cannot write stops the client
                    self._fail(exc if isinstance(exc, StoreWriteError) else self.log.write_error(exc))
                    return
                self.log.journal.rotate_if_large()

    async def close(self, inflight: list[asyncio.Future], wait_s: float, on_error: bool = False) -> None:
        """Last flush, then the journal closes. Leaving on an error or after a failure, calls
        on the wire are waited for first: their answers are paid for and go to the journal."""
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        if self.log is not None and self.log.failure is not None:
            self._fail(self.log.failure)
        if (on_error or self.failure is not None) and inflight:
            self.closing = True
            await asyncio.wait(inflight, timeout=wait_s)
        self.closing = False
        if self.log is not None:
            self._final_flush()
            self.log = None

    def _final_flush(self) -> None:
        try:
            self.log.flush()
        except StoreWriteError as exc:
            self._fail(exc)
            self.log.journal.release_reserve()  # the journal is done: its reserve may let DuckDB finish
            try:
                self.log.flush()
            except StoreWriteError:
                pass  # the journal keeps the rows; the next open writes them
        self.log.release()


def _quiet_current_task() -> None:
    """The task about to raise StoreWriteError ends quietly if nobody awaits it: a batch's other
    workers all stop on the same error, and one line (from close) is enough to say so."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop (a flush from a worker thread)
        return
    if task is not None:
        task.add_done_callback(mark_retrieved)
