"""HTTP transport for OpenAI-compatible chat endpoints (aiohttp + orjson).

This is the fast path for the local server, vLLM, SGLang, llama.cpp, Ollama and
OpenAI itself: one pooled session, no SDK layers. Providers that need request
translation go through litellm (litellm_transport.py) with the same interface.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import re
import time
from dataclasses import dataclass
from typing import Any, Callable

import aiohttp
import orjson

from .tool_calls import with_tool_calls

REQUEST_HASH_HEADER = "X-Factory-Request-Hash"


@dataclass
class Reply:
    """What every transport returns: the parts of a chat completion we use."""

    content: str | None
    finish_reason: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    refusal: str | None = None
    batch_id: str | None = None  # the provider batch that answered (batch mode)
    resumed: bool = False  # from a batch an earlier process submitted (and counted as its attempt)

    def problem(self) -> tuple[str | None, str | None]:
        """(error kind, message) when the reply cannot be used as it is, else (None, None)."""
        if self.refusal:
            return "refusal", f"the model refused: {self.refusal[:300]}"
        if self.finish_reason == "content_filter":
            return "content_filter", "the provider's content filter stopped the reply"
        if self.finish_reason == "length":
            return "length", "the reply was cut off at max_tokens"
        if self.content is None:
            return "empty", "the reply had no content"
        return None, None


class TransportError(Exception):
    """A failed HTTP exchange, classified so the client knows whether to retry."""

    # Not retried: auth, quota, context_length, not_found, bad_request, unsupported_format (the same
    # request meets the same answer); bad_response is: a garbled or cut reply usually comes whole next time.
    RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response"})

    def __init__(self, kind: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.resumed = False  # batch mode: from a batch an earlier process submitted (and counted as its attempt)

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


# Error objects as OpenAI, vLLM, SGLang, llama.cpp, LiteLLM's proxy and OpenRouter send them:
# {"error": {"message", "type", "param", "code"}}, under an error status or, from some proxies, under 200.
# `type` and `code` say what failed more precisely than the status: OpenAI's 429 is a rate limit
# (type "requests"/"tokens", code "rate_limit_exceeded") or a spent account ("insufficient_quota"),
# which no retry mends; vLLM's type is an exception name ("BadRequestError") and its code the status;
# LiteLLM's proxy sends the status as a string code ("401"). Words are matched on lower-case letters
# and digits ("rate_limit_error" -> "ratelimiterror"), in this order: the first kind that matches wins.
ERROR_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("context_length", ("contextlength", "contextwindow", "exceedcontext", "prompttoolong")),
    ("quota", ("insufficientquota", "quotaexceeded", "billing", "budgetexceeded", "credit")),
    ("auth", ("invalidapikey", "authentication", "autherror", "unauthorized", "permission", "expiredkey",
              "accessdenied", "invalidauth")),
    ("rate_limit", ("ratelimit", "toomanyrequests", "slowdown")),
    ("not_found", ("notfound",)),
    ("timeout", ("timeout", "timedout")),
    ("server", ("servererror", "internal", "unavailable", "overloaded", "apierror")),
    ("bad_request", ("invalidrequest", "badrequest", "validation", "notsupported", "invalidvalue")),
)  # fmt: skip
RATE_LIMIT_TYPES = frozenset({"requests", "tokens"})  # OpenAI's rate-limit types name the exhausted limit
CONTEXT_MESSAGE = re.compile(
    r"context length|context window|context size|maximum model length|too many tokens|prompt is too long"
    r"|prompt_too_long",
    re.IGNORECASE,
)
# A 400 about the reply's budget rather than the prompt: OpenAI names param "max_tokens", vLLM says
# "'max_tokens' ... is too large", Anthropic "output tokens". The same kind as a long prompt, its own fix.
MAX_TOKENS_MESSAGE = re.compile(r"max_tokens|max_completion_tokens|output tokens", re.IGNORECASE)
MAX_TOKENS_HINT = "the reply budget (max_tokens) is above what the model allows; lower llm.max_tokens_cap: "
KIND_HINTS = {
    "auth": "check the API key: ",
    "quota": "the account's quota or credit is spent: ",
    "context_length": "prompt too long for the model's context: ",
    "not_found": "check the model name and base_url: ",
}


def compact(value: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", str(value).lower()) if value is not None else ""


def error_object(data: Any) -> dict[str, Any] | None:
    """The error object of a reply body, or None when it carries none."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        return error
    if isinstance(error, str) and error.strip():  # {"error": "message"}, as some proxies write it
        return {"message": error}
    if data.get("object") == "error" and "message" in data:  # vLLM's shape before it nested the fields
        return data
    return None


def kind_from_words(error: dict[str, Any]) -> str | None:
    type_ = compact(error.get("type"))
    if type_ in RATE_LIMIT_TYPES:
        return "rate_limit"
    words = f"{type_} {compact(error.get('code'))}"
    return next((kind for kind, needles in ERROR_WORDS if any(n in words for n in needles)), None)


def status_hint(error: dict[str, Any]) -> int | None:
    """The HTTP status an error object names in its code (vLLM, LiteLLM, OpenRouter, llama.cpp)."""
    code = error.get("code")
    if isinstance(code, bool) or not isinstance(code, (int, str)) or not str(code).strip().isdigit():
        return None
    status = int(code)
    return status if 400 <= status <= 599 else None


def classify_error_object(error: dict[str, Any], status: int, headers: Any) -> TransportError | None:
    """The kind an error object names; None when neither its words nor its code place it."""
    message = " ".join(str(error.get("message") or "").split())[:300]
    labels = ", ".join(str(error[k]) for k in ("type", "code") if error.get(k) not in (None, "", "None"))
    shown = f"HTTP {status}" + (f" ({labels})" if labels else "") + f": {message or 'no message'}"
    kind = kind_from_words(error)
    if kind == "bad_request" and status >= 500:
        kind = None  # a server failing with a request-shaped label: its status decides
    if kind in (None, "bad_request") and CONTEXT_MESSAGE.search(message):
        kind = "context_length"  # vLLM: BadRequestError, "This model's maximum context length is ..."
    if (
        status < 500
        and kind in (None, "bad_request", "context_length")
        and (error.get("param") in ("max_tokens", "max_completion_tokens") or MAX_TOKENS_MESSAGE.search(message))
    ):
        return TransportError("context_length", MAX_TOKENS_HINT + shown, status)
    if kind is None:
        hint = status_hint(error) or (status if status != 200 else None)
        if hint is None:
            return None
        by_status = classify_status(hint, message, headers)  # the status the object names, if not the reply's
        return TransportError(by_status.kind, KIND_HINTS.get(by_status.kind, "") + shown, status, by_status.retry_after)
    if kind == "bad_request" and ("response_format" in message or error.get("param") == "response_format"):
        kind = "unsupported_format"
    retry_after = parse_retry_after(headers) if kind in ("rate_limit", "server") else None
    return TransportError(kind, KIND_HINTS.get(kind, "") + shown, status, retry_after)


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
    if status == 402:
        return TransportError("quota", f"HTTP 402 (the account's quota or credit is spent): {snippet}", status)
    if status == 404:
        return TransportError("not_found", f"HTTP 404 (check the model name and base_url): {snippet}", status)
    if status == 400 and ("context" in text and ("exceed" in text or "length" in text)):
        return TransportError("context_length", f"prompt too long for the model's context: {snippet}", status)
    if status == 400 and "response_format" in text:
        return TransportError("unsupported_format", f"HTTP 400: {snippet}", status)
    return TransportError("bad_request", f"HTTP {status}: {snippet}", status)


def classify_reply(status: int, payload: bytes, headers: Any) -> TransportError:
    """An error reply, by its error object where that names what failed, else by its status."""
    try:
        error = error_object(orjson.loads(payload))
    except orjson.JSONDecodeError:
        error = None
    found = classify_error_object(error, status, headers) if error is not None else None
    return found or classify_status(status, payload.decode("utf-8", "replace"), headers)


def parse_completion(payload: bytes, headers: Any = None) -> Reply:
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise TransportError("bad_response", f"not a chat completion: {payload[:200]!r}") from None
    error = error_object(data)
    if error is not None:  # a 200 carrying an error: what it names decides the retry, not "a bad reply"
        found = classify_error_object(error, 200, headers or {})
        raise found or TransportError("bad_response", f"HTTP 200 with an error object: {payload[:300]!r}")
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise TransportError("bad_response", f"not a chat completion: {payload[:200]!r}") from None
    usage = data.get("usage") or {}
    return Reply(
        content=with_tool_calls(message.get("content"), message.get("tool_calls")),
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        refusal=message.get("refusal"),
    )


# Whom to tell that the request this task is sending has left. A context variable: aiohttp sends a
# request in the task that asked for it, and every call runs in a task of its own.
ON_SENT: contextvars.ContextVar[Callable[[], Any] | None] = contextvars.ContextVar("on_sent", default=None)


class NoticedRequest(aiohttp.ClientRequest):
    """aiohttp's request, calling ON_SENT once it holds a connection and writes its headers.

    An aiohttp trace config could say the same, but it switches every trace signal on for every
    request: 0.16 ms of CPU per request, 28% of the client's (benchmarks/llm_overhead.py).
    """

    async def send(self, conn: Any) -> Any:
        on_sent = ON_SENT.get()
        if on_sent is not None:
            logged = on_sent()
            if logged is not None:
                await logged  # the call log's commit of this attempt, shared with the turn's other writes
        return await super().send(conn)


class OpenAICompatTransport:
    # chat() takes `on_sent`, called once the request holds a connection, before it writes its headers,
    # and awaited if it returns an awaitable (the call log's commit of the attempt): the call log counts
    # an attempt then, not before a wait for a connection that a kill may cut short.
    notices_sends = True
    one_shot = False  # a connection per request (streaming.py: llama.cpp closes one after a stream)

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
            connector = aiohttp.TCPConnector(limit=self.max_connections, ttl_dns_cache=300, force_close=self.one_shot)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self.timeout, headers=self.headers, request_class=NoticedRequest
            )
        return self._session

    async def chat(
        self, body: dict[str, Any], request_hash: str | None = None, on_sent: Callable[[], Any] | None = None
    ) -> Reply:
        session = self._get_session()
        # The request hash travels as a header so server-side logs can be joined to llm_calls.
        headers = {REQUEST_HASH_HEADER: request_hash} if request_hash else None
        sent_to = ON_SENT.set(on_sent)  # not a context manager: this runs per request (see NoticedRequest)
        try:
            async with session.post(self.url, data=orjson.dumps(body), headers=headers) as resp:
                payload = await resp.read()
                headers = resp.headers
                if resp.status != 200:
                    raise classify_reply(resp.status, payload, headers)
        except asyncio.TimeoutError:
            raise TransportError("timeout", f"no complete reply within {self.timeout.total:g}s") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportError("bad_response", f"reply cut off: {exc}") from None
        except aiohttp.ClientError as exc:
            raise TransportError("connection", f"{type(exc).__name__}: {exc}") from None
        finally:
            ON_SENT.reset(sent_to)
        return parse_completion(payload, headers)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
