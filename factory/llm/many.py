"""Many requests through one client: a bounded window in flight, results as they finish."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Awaitable, Callable, Iterable

from .request import Request, Result


async def iter_results(
    run: Callable[[Request], Awaitable[Result]], requests: Iterable[Request], window: int
) -> AsyncIterator[tuple[int, Result]]:
    """Yield (index, result) as calls finish, with at most `window` started and unfinished.
    A call that raises (StoreWriteError) ends the iteration; the others then end on their own."""
    finished: asyncio.Queue[tuple[int, asyncio.Task]] = asyncio.Queue()
    running: set[asyncio.Task] = set()
    source = enumerate(requests)
    exhausted = False
    try:
        while True:
            while not exhausted and len(running) < window:
                item = next(source, None)
                if item is None:
                    exhausted = True
                    break
                task = asyncio.ensure_future(run(item[1]))
                # A done-callback per task: no scan over the whole window at each wake-up.
                task.add_done_callback(lambda t, i=item[0]: finished.put_nowait((i, t)))
                running.add(task)
            if not running:
                return
            index, task = await finished.get()
            running.discard(task)
            yield index, task.result()
    finally:
        for task in running:  # left early: nobody reads these, so mark their outcome seen
            task.add_done_callback(mark_retrieved)
        while not finished.empty():
            mark_retrieved(finished.get_nowait()[1])


def mark_retrieved(task: asyncio.Future) -> None:
    """Mark a task's outcome as seen (asyncio warns about exceptions nobody read)."""
    if not task.cancelled():
        task.exception()
