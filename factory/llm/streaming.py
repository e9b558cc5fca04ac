"""A streamed chat completion: the reply arrives token by token, and only silence times out.

Why: a non-streamed request has one deadline for the whole reply. On a busy CPU the
embedded model can decode a 512-token reply more slowly than `llm.timeout_s` allows;
the request then timed out while it was still decoding and was sent again from zero,
three times, and none finished. Streamed, `llm.timeout_s` bounds the wait for the
*next* token (the prompt's processing before the first one included): a reply that
keeps coming is never cut, a server that stops answering still is, and the
in-flight register counts the tokens as they arrive. The reply's length is bounded
by its max_tokens, so a stream always ends.

Used for the embedded model by default and for any OpenAI-compatible server with
`llm.stream: true` (vLLM, SGLang, llama.cpp and OpenAI all stream this way).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import aiohttp
import orjson

from .inflight import IN_FLIGHT
from .tool_calls import with_tool_calls
from .transport import (
    ON_SENT,
    REQUEST_HASH_HEADER,
    OpenAICompatTransport,
    Reply,
    TransportError,
    classify_error_object,
    classify_reply,
    error_object,
    parse_completion,
)

CONNECT_TIMEOUT_S = 30.0


class StreamedReply:
    """The pieces of a reply put together from its chunks."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.refusal: str | None = None

    def add(self, chunk: dict[str, Any]) -> int:
        """Take one chunk; returns how many tokens it carried (a chunk is a token on the servers we stream from)."""
        error = error_object(chunk)
        if error is not None:
            found = classify_error_object(error, 200, {})
            raise found or TransportError("bad_response", f"the stream carried an error: {str(error)[:300]}")
        self.usage = chunk.get("usage") or self.usage
        choices = chunk.get("choices") or []
        if not choices:
            return 0
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") or {}
        if delta.get("refusal"):
            self.refusal = (self.refusal or "") + delta["refusal"]
        for call in delta.get("tool_calls") or []:
            self._add_tool_call(call)
        text = delta.get("content")
        if text:
            self.content.append(text)
        return 1 if text or delta.get("tool_calls") else 0

    def _add_tool_call(self, part: dict[str, Any]) -> None:
        call = self.tool_calls.setdefault(int(part.get("index", len(self.tool_calls))), {"function": {}})
        call["id"] = part.get("id") or call.get("id")
        call["type"] = part.get("type") or call.get("type", "function")
        function = part.get("function") or {}
        if function.get("name"):
            call["function"]["name"] = function["name"]
        if function.get("arguments"):
            call["function"]["arguments"] = call["function"].get("arguments", "") + function["arguments"]

    def reply(self) -> Reply:
        calls = [self.tool_calls[i] for i in sorted(self.tool_calls)] or None
        content = "".join(self.content) if self.content or not calls else None
        return Reply(
            content=with_tool_calls(content, calls),
            finish_reason=self.finish_reason,
            prompt_tokens=self.usage.get("prompt_tokens"),
            completion_tokens=self.usage.get("completion_tokens"),
            refusal=self.refusal,
        )


def chunk_of(line: bytes) -> dict[str, Any] | None:
    """The JSON of one server-sent-events data line; None for keep-alives, comments and the [DONE] mark."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    data = line[5:].strip()
    if not data or data == b"[DONE]":
        return None
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise TransportError("bad_response", f"not a stream chunk: {data[:200]!r}") from None
    if not isinstance(chunk, dict):
        raise TransportError("bad_response", f"not a stream chunk: {data[:200]!r}")
    return chunk


class StreamingTransport(OpenAICompatTransport):
    """OpenAICompatTransport with `stream: true`; `idle_timeout_s` bounds each wait for the next bytes."""

    streams = True  # chat() takes the in-flight ticket, to count the tokens as they come
    # llama.cpp's server closes the connection after a streamed reply; a pooled one then fails the next
    # request ("Can not write request body") and costs a retry. On loopback a fresh connection is free.
    one_shot = True

    def __init__(self, base_url: str, api_key: str | None, idle_timeout_s: float, max_connections: int):
        super().__init__(base_url, api_key, idle_timeout_s, max_connections)
        self.idle_timeout_s = idle_timeout_s
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=idle_timeout_s)

    async def chat(
        self,
        body: dict[str, Any],
        request_hash: str | None = None,
        on_sent: Callable[[], Any] | None = None,
        ticket: int | None = None,
    ) -> Reply:
        session = self._get_session()
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        headers = {REQUEST_HASH_HEADER: request_hash} if request_hash else None
        parts = StreamedReply()
        sent_to = ON_SENT.set(on_sent)
        try:
            async with session.post(self.url, data=orjson.dumps(streamed), headers=headers) as resp:
                if resp.status != 200:
                    raise classify_reply(resp.status, await resp.read(), resp.headers)
                if "event-stream" not in resp.headers.get("Content-Type", ""):  # not streamed after all: a
                    return parse_completion(await resp.read(), resp.headers)  # whole reply or an error object
                async for line in resp.content:
                    chunk = chunk_of(line)
                    if chunk is not None:
                        IN_FLIGHT.streamed_token(ticket, parts.add(chunk))
        except asyncio.TimeoutError:
            got = f"after {len(parts.content)} streamed tokens" if parts.content else "before the first token"
            raise TransportError("timeout", f"no reply bytes for {self.idle_timeout_s:g}s ({got})") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError("bad_response", f"stream cut off: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TransportError("connection", f"{type(exc).__name__}: {exc}") from None
        finally:
            ON_SENT.reset(sent_to)
        if parts.finish_reason is None:
            raise TransportError("bad_response", "the stream ended without a finish_reason (cut off)")
        return parts.reply()


def http_transport(endpoint: Any, config: Any) -> OpenAICompatTransport:
    """The transport for an OpenAI-compatible endpoint: streamed for the embedded model or with llm.stream: true."""
    stream = config.stream if config.stream is not None else endpoint.provider == "local"
    chosen = StreamingTransport if stream else OpenAICompatTransport
    return chosen(endpoint.base_url, endpoint.api_key, config.timeout_s, max(config.concurrency, 8))
