"""HTTP transport for OpenAI-compatible chat endpoints (aiohttp + orjson).

This is the fast path for the local server, vLLM, SGLang, llama.cpp, Ollama and
OpenAI itself: one pooled session, no SDK layers. Providers that need request
translation go through litellm (litellm_transport.py) with the same interface.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson


REQUEST_HASH_HEADER = "X-Factory-Request-Hash"


@dataclass
class Reply:
    """What every transport returns: the parts of a chat completion we use."""

    content: str | None
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    refusal: str | None = None


class TransportError(Exception):
    """A failed HTTP exchange, classified so the client knows whether to retry."""

    RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response"})

    def __init__(self, kind: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in self.RETRYABLE


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from Retry-After (seconds or HTTP date) or retry-after-ms."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def classify_status(status: int, text: str, headers: Any) -> TransportError:
    snippet = " ".join(text.split())[:300]
    if status == 429:
        return TransportError("rate_limit", f"HTTP 429: {snippet}", status, parse_retry_after(headers))
    if status in (408, 504):
        return TransportError("timeout", f"HTTP {status}: {snippet}", status)
    if status >= 500:
        return TransportError("server", f"HTTP {status}: {snippet}", status, parse_retry_after(headers))
    if status in (401, 403):
        return TransportError("auth", f"HTTP {status} (check the API key): {snippet}", status)
    if status == 404:
        return TransportError("not_found", f"HTTP 404 (check the model name and base_url): {snippet}", status)
    if status == 400 and ("context" in text and ("exceed" in text or "length" in text)):
        return TransportError("context_length", f"prompt too long for the model's context: {snippet}", status)
    if status == 400 and "response_format" in text:
        return TransportError("unsupported_format", f"HTTP 400: {snippet}", status)
    return TransportError("bad_request", f"HTTP {status}: {snippet}", status)


def parse_completion(payload: bytes) -> Reply:
    try:
        data = orjson.loads(payload)
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError):
        raise TransportError("bad_response", f"not a chat completion: {payload[:200]!r}") from None
    usage = data.get("usage") or {}
    return Reply(
        content=message.get("content"),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        refusal=message.get("refusal"),
    )


class OpenAICompatTransport:
    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, max_connections: int):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout, headers=self.headers)
        return self._session

    async def chat(self, body: dict[str, Any], request_hash: str | None = None) -> Reply:
        session = self._get_session()
        # The request hash travels as a header so server-side logs can be joined to llm_calls.
        headers = {REQUEST_HASH_HEADER: request_hash} if request_hash else None
        try:
            async with session.post(self.url, data=orjson.dumps(body), headers=headers) as resp:
                payload = await resp.read()
                if resp.status != 200:
                    raise classify_status(resp.status, payload.decode("utf-8", "replace"), resp.headers)
        except asyncio.TimeoutError:
            raise TransportError("timeout", f"no complete reply within {self.timeout.total:g}s") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError("bad_response", f"reply cut off: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TransportError("connection", f"{type(exc).__name__}: {exc}") from None
        return parse_completion(payload)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
