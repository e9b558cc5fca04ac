"""Call-log writes committed together: one transaction for every write of an event loop's turn.

A commit per attempt and per answer cost 40% of the client's CPU at a few thousand calls a second
(benchmarks/llm_overhead.py). A write queued here is committed with every other write its event loop
queues in the same turn, by a callback the first one schedules: no timer, so no wait is added, and at a
trickle of replies each is still its own commit. Writers wait for their commit: a caller gets a result
only once its answer is kept (a kill loses nothing it was handed), and a request is sent only once its
attempt is (a kill after the send still counts it: transport.NoticedRequest). A cache hit's count is
not waited for.

Outside a running event loop a write is committed at once. A failed commit is handed to `on_failure`
(the call log stops every client) and raised in the answers' writers waiting on it; it never escapes
the loop's callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import StoreWriteError

Statement = tuple[str, list[Any]]
running_loop = asyncio.events._get_running_loop  # the running loop or None, without raising


@dataclass
class Batch:
    tables: set[str] = field(default_factory=set)
    statements: list[Statement] = field(default_factory=list)
    waiters: list[asyncio.Future] = field(default_factory=list)


class GroupCommit:
    def __init__(self, write: Callable[[tuple[str, ...], list[Statement]], None],
                 on_failure: Callable[[StoreWriteError], None]):  # fmt: skip
        self._write = write  # commits (tables, statements) in one transaction; raises StoreWriteError
        self._on_failure = on_failure
        self._queued: dict[asyncio.AbstractEventLoop, Batch] = {}
        self._lock = threading.Lock()  # clients on one store may run in loops of their own threads

    def add(self, tables: tuple[str, ...], statements: list[Statement], wait: bool = False) -> asyncio.Future | None:
        """Queue the statements for the end of this turn; with `wait`, a future done once they are committed.
        Outside a running loop they are committed now (raising StoreWriteError), and None is returned."""
        loop = running_loop()
        if loop is None:
            self._write(tables, statements)
            return None
        with self._lock:
            batch = self._queued.get(loop)
            if batch is None:
                batch = self._queued[loop] = Batch()
                loop.call_soon(self._flush_loop, loop)
            batch.tables.update(tables)
            batch.statements += statements
            if not wait:
                return None
            done = loop.create_future()
            batch.waiters.append(done)
            return done

    def pending(self) -> bool:
        return bool(self._queued)

    def flush(self) -> None:
        """Commit what this loop (or, outside one, every loop) has queued, now."""
        loop = running_loop()
        for queued in [loop] if loop is not None else list(self._queued):
            self._flush_loop(queued)

    def _flush_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            batch = self._queued.pop(loop, None)
        if batch is None:
            return
        try:
            self._write(tuple(sorted(batch.tables)), batch.statements)
        except Exception as exc:  # a loop callback must not raise: the failure goes to whoever waits
            failure = exc if isinstance(exc, StoreWriteError) else StoreWriteError(f"{type(exc).__name__}: {exc}")
            self._on_failure(failure)
            for waiter in batch.waiters:
                _settle(waiter, StoreWriteError(str(failure)))
            return
        for waiter in batch.waiters:
            _settle(waiter, None)


def _settle(waiter: asyncio.Future, failure: BaseException | None) -> None:
    """Finish a writer's future from any thread; a loop already closed has nobody left to tell."""

    def finish() -> None:
        if waiter.done():
            return
        if failure is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(failure)
            waiter.exception()  # retrieved: a writer cancelled meanwhile leaves no warning

    loop = waiter.get_loop()
    if running_loop() is loop:
        finish()
        return
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(finish)
