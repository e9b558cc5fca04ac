"""Request pacing: per-minute request/token budgets and a shared 429 cool-down."""

from __future__ import annotations

import asyncio
import time
from collections import deque


class TokenBucket:
    """Refills at `per_minute / 60` a second and holds at most ten seconds' worth,
    so a fresh run does not fire a whole minute's budget in one burst."""

    def __init__(self, per_minute: float):
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * 10)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self._lock = asyncio.Lock()  # FIFO: waiters are served in arrival order

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float) -> None:
        async with self._lock:
            while True:
                self._refill()
                # A request larger than the bucket goes once the bucket is full.
                if self.level >= amount or self.level >= self.capacity:
                    self.level -= amount
                    return
                await asyncio.sleep((min(self.capacity, amount) - self.level) / self.rate)

    def give_back(self, amount: float) -> None:
        """Correct an estimate once the real usage is known (amount may be negative)."""
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    def __init__(self, rpm: float | None, tpm: float | None):
        self.requests = TokenBucket(rpm) if rpm else None
        self.tokens = TokenBucket(tpm) if tpm else None

    async def acquire(self, estimated_tokens: int) -> None:
        if self.requests:
            await self.requests.take(1)
        if self.tokens:
            await self.tokens.take(estimated_tokens)

    def settle(self, estimated_tokens: int, actual_tokens: int | None) -> None:
        if self.tokens and actual_tokens is not None:
            self.tokens.give_back(estimated_tokens - actual_tokens)


class CoolDown:
    """When many 429s arrive together the provider is saturated: everyone waits,
    instead of each request hammering it on its own backoff schedule."""

    def __init__(self, burst: int, window_s: float, pause_s: float):
        self.burst = burst
        self.window_s = window_s
        self.pause_s = pause_s
        self.recent: deque[float] = deque()
        self.until = 0.0
        self.pauses = 0

    def record_429(self, retry_after: float | None) -> None:
        now = time.monotonic()
        self.recent.append(now)
        while self.recent and self.recent[0] < now - self.window_s:
            self.recent.popleft()
        if len(self.recent) >= self.burst:
            pause = max(self.pause_s, retry_after or 0.0)
            if now + pause > self.until:
                self.until = now + pause
                self.pauses += 1
            self.recent.clear()

    async def wait(self) -> None:
        delay = self.until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
