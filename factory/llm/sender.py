"""Sending one request body: pacing, the shared cool-down, and retries.

The client decides what to send; the sender gets it through: it waits out the
cool-down and the rate limits, retries retryable transport errors with jittered
exponential backoff (or as long as Retry-After says), and counts what it spent.
"""

from __future__ import annotations

import asyncio
import functools
import random
from dataclasses import dataclass
from typing import Any, Callable

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from .config import LLMConfig
from .inflight import IN_FLIGHT
from .limits import CoolDown, RateLimiter
from .transport import Reply, TransportError

MAX_RETRY_AFTER_S = 600.0


@dataclass
class Tally:
    """What one logical call spent across its HTTP attempts."""

    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    batch_id: str | None = None  # the provider batch that gave the last reply (batch mode)

    def add(self, reply: Reply) -> None:
        if reply.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + reply.prompt_tokens
        if reply.completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + reply.completion_tokens
        self.batch_id = reply.batch_id or self.batch_id
        if reply.resumed:  # its batch was submitted by an earlier process, whose call log counted the attempt
            self.attempts -= 1


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, TransportError) and exc.retryable


def estimate_tokens(body: dict[str, Any]) -> int:
    """A rough prompt size (4 characters a token) plus the completion budget."""
    chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
    return chars // 4 + int(body.get("max_tokens") or 0)


class Sender:
    def __init__(self, transport, config: LLMConfig, before_attempt: Callable[[str, int, bool], Any] | None = None,
                 attempt_sent: Callable[[str, int], Any] | None = None):  # fmt: skip
        self.transport = transport
        self.config = config
        # before_attempt(key, number, log_now) runs just before each HTTP attempt: it raises to send
        # nothing more once the store cannot be written, and logs the attempt when the transport
        # cannot say when the request left; attempt_sent(key, number) logs it when it can. Both return
        # the log's commit to wait for (or None), so an attempt is committed before it leaves.
        self.before_attempt = before_attempt
        self.attempt_sent = attempt_sent if getattr(transport, "notices_sends", False) else None
        # A batch API queues requests under its own limits (enqueued tokens per model), not the synchronous
        # API's requests and tokens per minute: rpm/tpm would only slow the filling of the next batch.
        self.limiter = RateLimiter(None, None) if config.batch.enabled else RateLimiter(config.rpm, config.tpm)
        self.cooldown = CoolDown(config.cooldown_burst, config.cooldown_window_s, config.cooldown_s)

    async def send(self, body: dict[str, Any], tally: Tally, key: str) -> Reply:
        """The reply, or the last TransportError once retries run out.

        The first attempt is a plain call: most requests succeed at once, and
        tenacity's per-attempt bookkeeping costs more CPU than the HTTP itself
        at high concurrency. Only a retryable failure hands over to tenacity.
        """
        estimate = estimate_tokens(body) if self.limiter.tokens else 0
        try:
            return await self._attempt(body, tally, key, estimate)
        except TransportError as exc:
            if not exc.retryable or self.config.max_retries == 0:
                raise
            await asyncio.sleep(self.delay(exc, 1))
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.max_retries),
            retry=retry_if_exception(_is_retryable),
            wait=lambda state: self.delay(state.outcome.exception(), state.attempt_number + 1),
            reraise=True,
        )
        return await retrying(self._attempt, body, tally, key, estimate)

    async def _attempt(self, body: dict[str, Any], tally: Tally, key: str, estimate: int) -> Reply:
        await self.cooldown.wait()
        await self.limiter.acquire(estimate)
        number = tally.attempts + 1
        if self.before_attempt is not None:
            logged = self.before_attempt(key, number, self.attempt_sent is None)
            if logged is not None:
                await logged  # the call log holds the attempt before it is sent
        tally.attempts = number
        ticket, timed_out = IN_FLIGHT.begin(key, number), False
        try:
            reply = await self._chat(body, key, number, ticket)
        except TransportError as exc:
            timed_out = exc.kind == "timeout"
            tally.attempts -= exc.resumed  # as for a resumed Reply (Tally.add): the earlier process counted it
            if exc.kind == "rate_limit":
                self.cooldown.record_429(exc.retry_after)
            raise
        finally:
            IN_FLIGHT.end(ticket, timed_out)
        tally.add(reply)
        used = (reply.prompt_tokens or 0) + (reply.completion_tokens or 0)
        self.limiter.settle(estimate, used if reply.prompt_tokens is not None else None)
        return reply

    async def _chat(self, body: dict[str, Any], key: str, number: int, ticket: int) -> Reply:
        extra: dict[str, Any] = {"ticket": ticket} if getattr(self.transport, "streams", False) else {}
        if self.attempt_sent is not None:
            extra["on_sent"] = functools.partial(self.attempt_sent, key, number)
        return await self.transport.chat(body, key, **extra)

    def delay(self, exc: BaseException | None, failures: int) -> float:
        """Seconds to wait after the `failures`-th failed attempt."""
        if isinstance(exc, TransportError) and exc.retry_after is not None:
            return min(exc.retry_after, MAX_RETRY_AFTER_S) * random.uniform(1.0, 1.1)
        ceiling = min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (failures - 1))
        return random.uniform(ceiling / 2, ceiling)  # jitter spreads out synchronized retries

    async def close(self) -> None:
        await self.transport.close()
