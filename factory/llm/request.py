"""What a caller asks for and what it gets back."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

if TYPE_CHECKING:
    from .config import LLMConfig


@dataclass
class Request:
    messages: list[dict[str, Any]]
    response_model: type[BaseModel] | dict[str, Any] | None = None
    stage: str = "default"
    sample_index: int = 0  # N samples of one prompt are N distinct requests
    params: dict[str, Any] = field(default_factory=dict)  # per-request overrides
    tag: Any = None  # the caller's own handle, returned untouched in the Result
    reply_tokens: int | None = None  # the role's estimate of the longest reply it asks for (sizes max_tokens)


CANCELLED = (
    "cancelled by its caller before the answer came (a task time limit such as coa.task_timeout_s, or the run stopping)"
)


@dataclass
class Result:
    request_hash: str
    ok: bool
    text: str | None = None
    parsed: Any = None  # a response_model instance (or checked dict) when ok
    error_kind: str | None = None  # rate_limit, server, timeout, connection, schema, length, ...
    error: str | None = None
    finish_reason: str | None = None
    cached: bool = False
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    tag: Any = None
    notes: tuple[str, ...] = ()  # what the reply's text needed to be read, e.g. LaTeX backslashes doubled
    batch_id: str | None = None  # the provider batch that answered (batch mode)


def call_params(config: LLMConfig, request: Request) -> dict[str, Any]:
    """The sampling parameters a request is sent with: the config's, then the request's own on top.
    A request that says how long its reply may run (`reply_tokens`) gets room for it, up to
    llm.max_tokens_cap, never less than llm.max_tokens: a reply cut off mid-JSON is paid for and asked again."""
    params = {"temperature": config.temperature, "max_tokens": config.max_tokens, **config.params}
    if request.reply_tokens:
        params["max_tokens"] = max(int(params["max_tokens"]), min(request.reply_tokens, config.max_tokens_cap))
    return {**params, **request.params}


def request_key(
    model_id: str,
    namespace: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    schema_json: str | None,
    sample_index: int,
) -> str:
    """The cache key: everything that changes the answer, and nothing else."""
    payload = orjson.dumps(
        [model_id, namespace, messages, params, schema_json, sample_index],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
    )
    return hashlib.sha256(payload).hexdigest()
