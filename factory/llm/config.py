"""LLM settings: which model, how hard to push it, how to retry."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from ..config import StrictModel
from .batch.config import BatchConfig

StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]


def check_base_url(value: str) -> str:
    """An http(s) URL with a host, or ValueError saying what is wrong: a typo here would
    otherwise be sent (and retried) as if the server were down."""
    shown = value if len(value) <= 80 else value[:77] + "..."
    wanted = "give an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/v1"
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"'{shown}' is not one URL: {wanted}")
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"'{shown}' is not an http(s) URL: {wanted}")
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number, or past 65535
        port_ok = False
    if not parts.hostname or not port_ok:
        raise ValueError(f"'{shown}' has no valid host and port: {wanted}")
    return value


class LocalModelConfig(StrictModel):
    """The embedded llama.cpp server (used for model "local" or "local:/path.gguf")."""

    n_ctx: int = Field(8192, ge=512, description="context tokens per request (each of n_parallel slots)")
    n_parallel: int = Field(4, ge=1, le=64, description="requests decoded together")
    threads: int | None = Field(None, ge=1, description="CPU threads (default: the cores free when it starts, >= 1)")
    startup_timeout_s: float = Field(120, gt=0)


class ModelPrice(StrictModel):
    """What a model costs where litellm's price map does not know it (self-hosted, a new model, a negotiated rate)."""

    input_usd_per_mtok: float = Field(ge=0, description="USD per million prompt tokens")
    output_usd_per_mtok: float = Field(ge=0, description="USD per million completion tokens")

    def per_token(self) -> tuple[float, float]:
        return self.input_usd_per_mtok / 1e6, self.output_usd_per_mtok / 1e6


class LLMConfig(StrictModel):
    model: str = Field(
        "local",
        description='"local", "local:/path/model.gguf", any litellm model string, or a model name with base_url',
    )
    base_url: str | None = Field(None, description="any OpenAI-compatible endpoint, e.g. http://host:8000/v1")
    api_key_env: str | None = Field(None, description="environment variable holding the key for base_url")
    transport: Literal["auto", "openai", "litellm"] = "auto"

    @field_validator("base_url")
    @classmethod
    def _base_url_is_http(cls, value: str | None) -> str | None:
        return None if value is None else check_base_url(value.strip())

    concurrency: int = Field(16, ge=1, le=4096)
    rpm: float | None = Field(None, gt=0, description="requests per minute (None: unlimited)")
    tpm: float | None = Field(None, gt=0, description="tokens per minute (None: unlimited)")

    timeout_s: float = Field(
        300, gt=0, description="one HTTP request, connect to last byte; streamed: the longest wait for the next bytes"
    )
    stream: bool | None = Field(
        None,
        description="stream replies, so timeout_s bounds silence and never a reply still coming "
        "(default: the embedded model streams, other servers do not)",
    )
    max_retries: int = Field(6, ge=0, description="transport retries on 429/5xx/timeouts/connection errors")
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_max_s: float = Field(60.0, ge=0)
    cooldown_burst: int = Field(8, ge=1, description="this many 429s within cooldown_window_s pause all requests")
    cooldown_window_s: float = Field(10.0, gt=0)
    cooldown_s: float = Field(20.0, ge=0)

    structured_mode: StructuredMode = "auto"
    max_parse_retries: int = Field(2, ge=0, description="re-asks after a reply fails the schema")
    max_tokens_cap: int = Field(
        8192,
        ge=1,
        description="ceiling of a reply budget: a sized request (Request.reply_tokens), a cut-off reply retried with more room",
    )

    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1)
    params: dict[str, Any] = Field(default_factory=dict, description="extra request parameters (top_p, seed, ...)")

    cache: bool = True
    cache_namespace: str = ""
    local: LocalModelConfig = Field(default_factory=LocalModelConfig)
    max_cost_usd: float | None = Field(
        None, ge=0, description="stop sending once the run store's recorded spend reaches this (USD; resumable)"
    )
    price: ModelPrice | None = Field(
        None, description="USD per million tokens, used instead of litellm's price map (e.g. a self-hosted model)"
    )
    batch: BatchConfig = Field(default_factory=BatchConfig, description="provider batch APIs (see docs/batch.md)")

    def in_flight(self) -> int:
        """Requests the client lets wait at once: llm.concurrency, or in batch mode llm.batch.in_flight
        (a batch fills only with requests that are waiting). The embedded model takes at most its
        llm.local.n_parallel slots: a request past them would wait inside llama.cpp with its timeout
        running, and be sent again when it ran out; waiting here costs nothing."""
        if self.batch.enabled:
            return self.batch.in_flight
        if (self.model or "local").strip().startswith("local"):
            return min(self.concurrency, self.local.n_parallel)
        return self.concurrency

    def close_wait_s(self) -> float:
        """How long a client closing on an error waits for calls on the wire: one request's timeout; in
        batch mode none (a submitted batch is in the run store and the next run follows it)."""
        return 0.0 if self.batch.enabled else self.timeout_s + 1
