"""Request pacing: the RPM limiter really spaces requests; Retry-After parsing."""

import asyncio
import time
from email.utils import formatdate

from test_llm_faults import ask

from factory.llm import LLMClient
from factory.llm.limits import TokenBucket
from factory.llm.transport import parse_retry_after


def test_rpm_limit_spaces_requests(server, fast_config):
    # 300 rpm = 5/s with a 10 s burst (50): 60 requests need at least ~2 s.
    async def go():
        async with LLMClient(fast_config(rpm=300, concurrency=64)) as llm:
            started.append(time.monotonic())  # the bucket is full from here: 50 go at once, then 5 a second
            return await llm.complete_many([ask(f"r{i} ") for i in range(60)], progress=False)

    started: list[float] = []
    assert all(r.ok for r in asyncio.run(go()))
    # From the client's start, not the first arrival (which a loaded machine delays): the 60th request cannot
    # leave before ~2 s, however late the first ones arrived. An unlimited client takes ~0.1 s.
    assert max(r["time"] for r in server.requests) - started[0] >= 1.9


def test_token_bucket_lets_an_oversized_request_through_when_full():
    async def go():
        bucket = TokenBucket(per_minute=600)  # capacity 100
        await bucket.take(500)  # larger than the bucket: goes once, leaves a debt
        return bucket.level

    assert asyncio.run(go()) < 0


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert 8 <= parse_retry_after({"retry-after": formatdate(time.time() + 10, usegmt=True)}) <= 10
    assert parse_retry_after({}) is None
