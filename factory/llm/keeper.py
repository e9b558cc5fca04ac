"""The client's side of the call log: log each attempt and answer as it happens (committed with
the rest of the event loop's turn), and stop the client at the first write that fails.

A store that cannot be written (a full disk) is not one request's failure: a
batch that went on would pay for answers it cannot keep. So the first failed
write is kept as `failure`, every later call and attempt raises it, and close()
raises it once calls already on the wire have come back (their answers are kept if the store
takes them).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import StoreWriteError
from ..store import Store
from .calllog import CallLog
from .many import mark_retrieved


class LogKeeper:
    def __init__(self) -> None:
        self.log: CallLog | None = None
        self.failure: StoreWriteError | None = None
        self.closing = False  # the batch is ending on an error: nothing new is sent
        self.on_wire: set[str] = set()  # request keys with an attempt sent and no row recorded yet

    def open(self, store: Store | None) -> None:
        """Open the call log (settling calls a dead process left on the wire)."""
        if store is not None:
            self.log = CallLog.open(store)

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

    def _logged(self, write, *args: Any) -> Any:
        try:
            return write(*args)
        except StoreWriteError as exc:
            self._fail(exc)
            _quiet_current_task()
            raise

    def begin(self, key: str, fixed: dict[str, Any]) -> None:
        if self.log is not None:
            self._logged(self.log.begin, key, fixed)

    def check_can_send(self) -> None:
        """Raise StoreWriteError after a failure; end the calling task (CancelledError) while closing,
        so a batch's leftover workers neither send nor record a failure for their item."""
        self.check()
        if self.closing:
            raise asyncio.CancelledError()

    def before_attempt(self, key: str, number: int, log_now: bool = True) -> asyncio.Future | None:
        """The sender's hook: nothing more is sent after a failure; the attempt is logged here
        when the transport cannot say when it left (`log_now`), else by attempt_sent."""
        self.check_can_send()
        return self.attempt_sent(key, number) if log_now else None

    def attempt_sent(self, key: str, number: int) -> asyncio.Future | None:
        """The request is leaving: log it. The future is done once the turn's commit holds it; the
        request waits for it before a byte leaves, so a kill from there on still counts the attempt
        (it raises StoreWriteError if the commit failed)."""
        self.on_wire.add(key)  # until its row is recorded: a call cancelled meanwhile is logged as cancelled
        if self.log is None:
            return None
        return self._logged(self.log.attempt, key, number)

    def record(self, row: dict[str, Any], now: bool = False) -> asyncio.Future | None:
        """Queue a finished call's row: a future done once it is committed (see committed), or with
        `now` (a path that cannot wait) committed at once."""
        self.on_wire.discard(row.get("request_hash"))
        if self.log is None:
            return None
        done = self._logged(self.log.record, row)
        if now and done is not None:
            self.log.flush()
        return done

    async def committed(self, done: asyncio.Future | None) -> None:
        """Wait for a recorded row's commit; StoreWriteError (stopping every client) if it failed."""
        if done is None:
            return
        try:
            await done
        except StoreWriteError as exc:
            self._fail(exc)
            _quiet_current_task()
            raise

    async def close(self, inflight: list[asyncio.Future], wait_s: float, on_error: bool = False) -> None:
        """Leaving on an error or after a failure, calls on the wire are waited for first: their
        answers are paid for, and kept if the store takes them."""
        if self.log is not None:
            self.log.flush()
            if self.log.failure is not None:
                self._fail(self.log.failure)
        if (on_error or self.failure is not None) and inflight:
            self.closing = True
            await asyncio.wait(inflight, timeout=wait_s)
        self.closing = False
        if self.log is not None:
            self.log.release()
            self.log = None


def _quiet_current_task() -> None:
    """The task about to raise StoreWriteError ends quietly if nobody awaits it: a batch's other
    workers all stop on the same error, and one line (from close) is enough to say so."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return
    if task is not None:
        task.add_done_callback(mark_retrieved)
