"""The batching transport: `chat()` like OpenAICompatTransport, answered through a provider's batch API.

Each call queues its body and waits. The collector submits what has queued once no new request has
come for `collect_window_s`, or at once when the queue reaches a batch's request or byte limit (a
larger queue is split into several batches). Each batch is recorded in the store, then polled until
it ends; its results resolve the waiting calls by custom id, with a Reply or the TransportError the
provider's line names, which the Sender retries (into the next batch) where the kind is retryable.
So a stage runs in rounds: every first request in one batch, every follow-up in the next.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from ...errors import SendingStopped
from ..transport import Reply, TransportError
from .config import BatchConfig
from .followed import FollowedBatch, settle
from .ledger import BatchLedger
from .protocol import BatchAPI, BatchState

STOPPING_KINDS = frozenset({"auth", "quota", "not_found"})  # every later batch would be refused the same way


class BatchRefused(SendingStopped):
    """The batch API refused a batch for a reason no retry mends (the key, the quota, the address),
    or could not be followed; batches already submitted stay in the store for the next run."""


def custom_id_for(request_hash: str | None, body: dict[str, Any]) -> str:
    """The same request key and body make the same id (a rerun finds its batch); 64 characters of [0-9a-f]."""
    return hashlib.sha256(orjson.dumps([request_hash, body], option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class Queued:
    custom_id: str
    item: bytes  # the request as the protocol sends it
    request_hash: str | None
    futures: list[asyncio.Future] = field(default_factory=list)
    on_sent: list[Callable[[], Any]] = field(default_factory=list)


class BatchTransport:
    notices_sends = True  # on_sent runs once the batch holding the request is accepted

    def __init__(self, api: BatchAPI, ledger: BatchLedger, config: BatchConfig, max_polls_failed: int = 6):
        self.api, self.ledger, self.config = api, ledger, config
        self.max_requests, self.max_bytes = config.limits(api.name)
        self.max_polls_failed = max_polls_failed
        self.queue: dict[str, Queued] = {}
        self.queued_bytes = 0
        self.earlier: dict[str, str] | None = None  # custom id -> a batch of an earlier run, not yet downloaded
        self.followed: dict[str, FollowedBatch] = {}
        self.failure: SendingStopped | None = None
        self._arrived = asyncio.Event()
        self._collector: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._recording: set[asyncio.Task] = set()  # downloaded, writing so in the ledger: let them finish
        self._load_lock = asyncio.Lock()

    async def chat(
        self, body: dict[str, Any], request_hash: str | None = None, on_sent: Callable[[], Any] | None = None
    ) -> Reply:
        if self.failure is not None:
            raise self.failure
        custom_id = custom_id_for(request_hash, body)
        future = asyncio.get_running_loop().create_future()
        batch_id = (await self._earlier_batches()).pop(custom_id, None)
        if batch_id is not None:  # submitted (and paid for) by an earlier run: wait for that batch
            self._follow(batch_id).wait(custom_id, future)
        else:
            self._enqueue(custom_id, body, request_hash, future, on_sent)
        outcome = await future
        if isinstance(outcome, TransportError):
            raise outcome
        return outcome

    async def _earlier_batches(self) -> dict[str, str]:
        async with self._load_lock:
            if self.earlier is None:
                self.earlier = await self.ledger.live_requests()
        return self.earlier

    def _enqueue(self, custom_id, body, request_hash, future, on_sent) -> None:
        queued = self.queue.get(custom_id)
        if queued is None:
            item = self.api.encode(custom_id, body)
            if len(item) > self.max_bytes:
                raise TransportError("bad_request", f"the request ({len(item)} bytes) exceeds a batch's byte limit")
            queued = self.queue[custom_id] = Queued(custom_id, item, request_hash)
            self.queued_bytes += len(item)
        queued.futures.append(future)
        if on_sent is not None:
            queued.on_sent.append(on_sent)
        self._arrived.set()
        if self._collector is None or self._collector.done():
            self._collector = self._spawn(self._collect())

    def _spawn(self, work) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _full(self) -> bool:
        return len(self.queue) >= self.max_requests or self.queued_bytes >= self.max_bytes

    async def _collect(self) -> None:
        """Submit batches while requests queue: each once the window passes quietly or the queue is full."""
        while self.queue:
            while not self._full():
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), self.config.collect_window_s)
                except asyncio.TimeoutError:
                    break
            self._spawn(self._submit(self._take()))

    def _take(self) -> list[Queued]:
        """The oldest requests that fit in one batch (at least one)."""
        taken, size = [], 0
        for custom_id in list(self.queue):
            item = self.queue[custom_id].item
            if taken and (len(taken) >= self.max_requests or size + len(item) > self.max_bytes):
                break
            taken.append(self.queue.pop(custom_id))
            size += len(item)
        self.queued_bytes -= size
        return taken

    async def _submit(self, batch: list[Queued]) -> None:
        followed = FollowedBatch("", resumed=False)
        for queued in batch:
            followed.waiters[queued.custom_id] = queued.futures
        try:
            try:
                state = await self.api.submit([queued.item for queued in batch])
            except TransportError as exc:
                if exc.kind in STOPPING_KINDS:
                    raise BatchRefused(f"the {self.api.name} batch API refused a batch: {exc}") from None
                followed.fail(exc)  # a retryable kind goes into a later batch through the Sender
                return
            followed.batch_id = state.batch_id
            self.followed[state.batch_id] = followed
            await self.ledger.created(state, [(queued.custom_id, queued.request_hash) for queued in batch])
            for queued in batch:
                for on_sent in queued.on_sent:
                    on_sent()
            await self._follow_to_end(followed, state)
        except SendingStopped as exc:
            self._stop(exc, followed)
        except TransportError as exc:  # the provider no longer knows the batch
            await self._lost(followed, exc)
        except Exception as exc:  # a bug: these requests fail (recorded as internal), the run goes on
            followed.fail(exc)

    def _follow(self, batch_id: str) -> FollowedBatch:
        followed = self.followed.get(batch_id)
        if followed is None:
            followed = self.followed[batch_id] = FollowedBatch(batch_id, resumed=True)
            self._spawn(self._resume(followed))
        return followed

    async def _resume(self, followed: FollowedBatch) -> None:
        try:
            await self._follow_to_end(followed, await self._poll(followed.batch_id))
        except SendingStopped as exc:
            self._stop(exc, followed)
        except TransportError as exc:
            await self._lost(followed, exc)
        except Exception as exc:
            followed.fail(exc)

    async def _lost(self, followed: FollowedBatch, exc: TransportError) -> None:
        """A batch the provider answers 404 for (deleted, or past its retention): not followed again;
        its callers get a retryable error, so their requests go into a new batch."""
        try:
            await self.ledger.gone(followed.batch_id, str(exc))
        except SendingStopped as stop:
            self._stop(stop, followed)
            return
        followed.fail(TransportError("server", f"batch {followed.batch_id} is unknown to the provider ({exc})"))

    async def _follow_to_end(self, followed: FollowedBatch, state: BatchState) -> None:
        while not state.done:
            await asyncio.sleep(self.config.poll_interval_s)
            seen = state
            state = await self._poll(followed.batch_id)
            if (state.status, state.counts) != (seen.status, seen.counts):
                await self.ledger.updated(state)
        results = await self._retrying(self.api.results, state, f"read the results of batch {state.batch_id}")
        followed.finish(state, results)
        self._recording.add(asyncio.current_task())  # close() waits for this write instead of cancelling it
        await self.ledger.updated(state, downloaded=True)

    async def _poll(self, batch_id: str) -> BatchState:
        return await self._retrying(self.api.poll, batch_id, f"follow batch {batch_id}")

    async def _retrying(self, call, arg, what: str):
        """call(arg), trying again after retryable failures; BatchRefused when it cannot be done."""
        for failures in range(1, self.max_polls_failed + 1):
            try:
                return await call(arg)
            except TransportError as exc:
                if exc.kind == "not_found":
                    raise  # the batch is gone: see _lost
                if not exc.retryable or failures == self.max_polls_failed:
                    raise BatchRefused(
                        f"cannot {what} ({exc}); it stays in the run store: run the same command again to resume it"
                    ) from None
            await asyncio.sleep(min(self.config.poll_interval_s * failures, 60.0))

    def _stop(self, exc: SendingStopped, followed: FollowedBatch) -> None:
        """Nothing more is sent: every caller, waiting now or later, gets this one error."""
        self.failure = self.failure or exc
        followed.fail(exc)
        for future in self._waiting():
            settle(future, exc)

    def _waiting(self) -> list[asyncio.Future]:
        """Every caller's future still open, queued or in a followed batch (the queue is emptied)."""
        futures = [f for queued in self.queue.values() for f in queued.futures]
        futures += [f for followed in self.followed.values() for fs in followed.waiters.values() for f in fs]
        self.queue.clear()
        self.queued_bytes = 0
        return [future for future in futures if not future.done()]

    async def close(self) -> None:
        """Stop collecting and polling; callers still waiting end cancelled (their batches, if submitted, are in
        the run store for the next run to follow)."""
        for future in self._waiting():
            future.cancel()
        for task in list(self._tasks):
            if task not in self._recording:
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._recording.clear()
        await self.api.close()
