"""One batch this process waits on: the callers waiting for its requests, and its results once read.

A batch may be this process's own (submitted by the collector) or one an earlier process submitted
and the ledger remembers (resumed): its answers are then handed to whichever caller asks for the
same custom id, even after they were downloaded.
"""

from __future__ import annotations

import asyncio
import dataclasses

from ..transport import Reply, TransportError
from .protocol import BatchState, Outcome, missing_result


class FollowedBatch:
    def __init__(self, batch_id: str, resumed: bool):
        self.batch_id = batch_id
        self.resumed = resumed
        self.waiters: dict[str, list[asyncio.Future]] = {}
        self.results: dict[str, Outcome] | None = None  # once downloaded: what no caller has taken yet
        self.state: BatchState | None = None

    def wait(self, custom_id: str, future: asyncio.Future) -> None:
        if self.results is None:
            self.waiters.setdefault(custom_id, []).append(future)
        else:
            settle(future, self._take(custom_id))

    def finish(self, state: BatchState, results: dict[str, Outcome]) -> None:
        """The batch's results are read: every waiting caller gets its own."""
        self.state, self.results = state, results
        for custom_id, futures in self.waiters.items():
            outcome = self._take(custom_id)
            for future in futures:
                settle(future, outcome)
        self.waiters.clear()

    def fail(self, exc: BaseException) -> None:
        if isinstance(exc, TransportError):
            exc.resumed = self.resumed
        for futures in self.waiters.values():
            for future in futures:
                settle(future, exc)
        self.waiters.clear()

    def _take(self, custom_id: str) -> Outcome:
        outcome = self.results.pop(custom_id, None)
        if outcome is None:
            return missing_result(custom_id, self.state)
        if isinstance(outcome, Reply):
            return dataclasses.replace(outcome, batch_id=self.batch_id, resumed=self.resumed)
        outcome.resumed = self.resumed
        return outcome


def settle(future: asyncio.Future, outcome: Outcome | BaseException) -> None:
    """Hand a caller its outcome (an exception is set, not raised, so the caller raises it)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
