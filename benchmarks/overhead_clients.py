"""The four clients the overhead benchmark compares, behind one small interface:
load() imports the library, open(url, concurrency), batch(conversations) -> replies,
close(), check(n) -> problems found after the batch. See llm_overhead.py."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable

from pydantic import BaseModel

MODEL = "bench"
PARAMS = {"temperature": 0.7, "max_tokens": 1024}  # what LLMConfig sends by default


class ToolModel(BaseModel):
    """The loopback server's reply content."""

    name: str
    description: str
    parameters: list[str]


def prompts(n: int) -> list[list[dict[str, str]]]:
    """N distinct conversations (distinct cache keys, distinct bodies)."""
    system = {"role": "system", "content": "You write tool definitions as JSON."}
    return [[system, {"role": "user", "content": f"Define tool number {i} for a parcel service."}] for i in range(n)]


def response_format() -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "ToolModel", "schema": ToolModel.model_json_schema()}}


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


async def bounded(conversations: list, concurrency: int, call: Callable[[list], Awaitable[str]]) -> list[str | None]:
    """Run call(messages) for each conversation, at most `concurrency` at once.
    call returns the reply content; the result is one error (or None) per request."""
    gate = asyncio.Semaphore(concurrency)

    async def one(messages: list) -> str | None:
        async with gate:
            try:
                ToolModel.model_validate_json(await call(messages))
            except Exception as exc:
                return error_text(exc)
        return None

    return await asyncio.gather(*(one(m) for m in conversations))


# -- the clients under test ---------------------------------------------------
# load() imports (timed as import_s); open() sets up (setup_s); batch() and
# close() are the measured part; check() verifies side effects afterwards.


class FactoryClient:
    note = "LLMClient.complete_many, pydantic response_model, cache=False, its SQLite call log"

    def load(self) -> None:
        from factory.llm import LLMClient, LLMConfig, Request
        from factory.store import Store

        self.LLMClient, self.LLMConfig, self.Request, self.Store = LLMClient, LLMConfig, Request, Store

    async def open(self, url: str, concurrency: int) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="llm_overhead_")
        self.store = self.Store(Path(self.tmp.name) / "bench.duckdb")
        config = self.LLMConfig(model=MODEL, base_url=url, concurrency=concurrency, cache=False)
        self.llm = await self.LLMClient(config, self.store, run_id="bench").start()

    async def batch(self, conversations: list) -> list[str | None]:
        requests = [self.Request(m, ToolModel, stage="bench", sample_index=i) for i, m in enumerate(conversations)]
        results = await self.llm.complete_many(requests, progress=False)
        return [None if r.ok else f"{r.error_kind}: {r.error}"[:300] for r in results]

    async def close(self) -> None:
        await self.llm.close()

    def check(self, n: int) -> list[str]:
        total, ok = self.store.query(
            "SELECT count(*), count(*) FILTER (WHERE status = 'ok') FROM llm_calls WHERE run_id = 'bench'"
        )[0]
        self.store.close()
        self.tmp.cleanup()
        if total == n and ok == n:
            return []
        return [f"llm_calls holds {total} rows ({ok} ok), expected {n} ok rows"]


class FactoryNoLogClient(FactoryClient):
    note = "the same LLMClient without a store: no call log (the factory row minus this one is what the log costs)"

    async def open(self, url: str, concurrency: int) -> None:
        config = self.LLMConfig(model=MODEL, base_url=url, concurrency=concurrency, cache=False)
        self.llm = await self.LLMClient(config, None, run_id="bench").start()

    def check(self, n: int) -> list[str]:
        return []


class AiohttpClient:
    note = "raw aiohttp POSTs: one ClientSession, TCPConnector(limit=concurrency), orjson body, resp.json()"

    def load(self) -> None:
        import aiohttp
        import orjson

        self.aiohttp, self.orjson = aiohttp, orjson

    async def open(self, url: str, concurrency: int) -> None:
        self.url = url.rstrip("/") + "/chat/completions"
        self.concurrency = concurrency
        connector = self.aiohttp.TCPConnector(limit=concurrency)
        headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
        self.session = self.aiohttp.ClientSession(connector=connector, headers=headers)
        self.format = response_format()

    async def _call(self, messages: list) -> str:
        body = {"model": MODEL, "messages": messages, **PARAMS, "response_format": self.format}
        async with self.session.post(self.url, data=self.orjson.dumps(body)) as resp:
            resp.raise_for_status()
            data = await resp.json()
        return data["choices"][0]["message"]["content"]

    async def batch(self, conversations: list) -> list[str | None]:
        return await bounded(conversations, self.concurrency, self._call)

    async def close(self) -> None:
        await self.session.close()

    def check(self, n: int) -> list[str]:
        return []


class OpenAIClient:
    note = "openai.AsyncOpenAI default httpx transport and limits (1000 connections, 100 keep-alive), max_retries=0"

    def load(self) -> None:
        import openai

        self.openai = openai

    async def open(self, url: str, concurrency: int) -> None:
        self.client = self.openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
        self.concurrency = concurrency
        self.format = response_format()

    async def _call(self, messages: list) -> str:
        reply = await self.client.chat.completions.create(
            model=MODEL, messages=messages, response_format=self.format, **PARAMS
        )
        return reply.choices[0].message.content

    async def batch(self, conversations: list) -> list[str | None]:
        return await bounded(conversations, self.concurrency, self._call)

    async def close(self) -> None:
        await self.client.close()

    def check(self, n: int) -> list[str]:
        return []


class LiteLLMClient:
    note = 'litellm.acompletion(model="openai/bench", api_base=..., num_retries=0), library defaults otherwise'

    def load(self) -> None:
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no price-list download at import
        import litellm

        self.litellm = litellm

    async def open(self, url: str, concurrency: int) -> None:
        self.url = url
        self.concurrency = concurrency
        self.format = response_format()

    async def _call(self, messages: list) -> str:
        reply = await self.litellm.acompletion(
            model=f"openai/{MODEL}", messages=messages, api_base=self.url, api_key="x",
            num_retries=0, response_format=self.format, **PARAMS,
        )  # fmt: skip
        return reply.choices[0].message.content

    async def batch(self, conversations: list) -> list[str | None]:
        return await bounded(conversations, self.concurrency, self._call)

    async def close(self) -> None:
        pass

    def check(self, n: int) -> list[str]:
        return []


CLIENT_CLASSES = {
    "factory": FactoryClient,
    "factory-nolog": FactoryNoLogClient,
    "aiohttp": AiohttpClient,
    "openai": OpenAIClient,
    "litellm": LiteLLMClient,
}
