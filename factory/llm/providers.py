"""Resolve a model string to an endpoint: where to send it and how.

- "local" (or nothing) / "local:/path.gguf": the embedded llama.cpp server;
- a name with `base_url`: any OpenAI-compatible server (vLLM, SGLang, Ollama...);
- "openai/…", "hosted_vllm/…", "deepseek/…", "openrouter/…", "ollama/…":
  OpenAI-compatible APIs, sent through the fast aiohttp transport;
- any other litellm model string: through litellm, which translates the API.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import FactoryError, MissingKeyError
from .config import LLMConfig, check_base_url


@dataclass(frozen=True)
class CompatProvider:
    default_base: str | None
    base_env: str | None
    key_env: str | None
    key_required: bool
    json_schema: bool  # accepts response_format json_schema


COMPAT = {
    "openai": CompatProvider("https://api.openai.com/v1", "OPENAI_BASE_URL", "OPENAI_API_KEY", True, True),
    "hosted_vllm": CompatProvider(None, "HOSTED_VLLM_API_BASE", "HOSTED_VLLM_API_KEY", False, True),
    "deepseek": CompatProvider("https://api.deepseek.com/v1", "DEEPSEEK_API_BASE", "DEEPSEEK_API_KEY", True, False),
    "openrouter": CompatProvider(
        "https://openrouter.ai/api/v1", "OPENROUTER_API_BASE", "OPENROUTER_API_KEY", True, True
    ),
    "ollama": CompatProvider("http://localhost:11434/v1", "OLLAMA_API_BASE", None, False, True),
}


@dataclass(frozen=True)
class Endpoint:
    provider: str  # "local", "openai", "hosted_vllm", "anthropic", ...
    model: str  # the name sent in the request body
    model_id: str  # the full string, logged and hashed
    transport: str  # "openai" (aiohttp) or "litellm"
    base_url: str | None = None
    api_key: str | None = None
    json_schema: bool = True


def _env_key(var: str | None, required: bool, model_id: str) -> str | None:
    if not var:
        return None
    value = os.environ.get(var)
    if required and not value:
        raise MissingKeyError(f"model '{model_id}' needs an API key: set {var} in the environment")
    return value or None


def _env_base(compat: CompatProvider, model_id: str) -> str:
    from_env = os.environ.get(compat.base_env or "", "").strip()
    if not from_env and compat.default_base is None:
        raise MissingKeyError(
            f"model '{model_id}' needs a server address: set {compat.base_env} or base_url (--base-url)"
        )
    if not from_env:
        return compat.default_base  # type: ignore[return-value]
    try:
        return check_base_url(from_env)
    except ValueError as exc:  # the same check as base_url in a config, naming where the value came from
        raise FactoryError(f"model '{model_id}': {compat.base_env}={exc}") from None


def _ollama_base(value: str) -> str:
    value = value.rstrip("/")
    return value if value.endswith("/v1") else value + "/v1"


def resolve_endpoint(config: LLMConfig, local_base_url: str | None = None) -> Endpoint:
    """Where and how to send requests for this config (no network, no server start)."""
    model_id = (config.model or "local").strip()
    if model_id == "local" or model_id.startswith("local:"):
        return Endpoint("local", "local", model_id, "openai", local_base_url)
    if config.base_url:
        key = _env_key(config.api_key_env, True, model_id)
        if config.transport == "litellm":  # litellm needs a provider prefix to pick its OpenAI client
            name = model_id if "/" in model_id else f"openai/{model_id}"
            return Endpoint("openai_compatible", name, model_id, "litellm", config.base_url, key)
        name = model_id.split("/", 1)[1] if model_id.startswith(("openai/", "hosted_vllm/")) else model_id
        return Endpoint("openai_compatible", name, model_id, "openai", config.base_url, key)
    prefix, _, name = model_id.partition("/")
    compat = COMPAT.get(prefix) if name else None
    if compat and config.transport != "litellm":
        base = _env_base(compat, model_id)
        base = _ollama_base(base) if prefix == "ollama" else base
        key = _env_key(compat.key_env, compat.key_required, model_id)
        return Endpoint(prefix, name, model_id, "openai", base, key, compat.json_schema)
    return _litellm_endpoint(model_id, config)


def _litellm_endpoint(model_id: str, config: LLMConfig) -> Endpoint:
    from . import litellm_transport

    missing = [k for k in litellm_transport.missing_env_keys(model_id) if k.endswith("_KEY")]
    if missing:
        raise MissingKeyError(f"model '{model_id}' needs an API key: set {' or '.join(missing)} in the environment")
    if "/" not in model_id and not litellm_transport.supports_json_schema(model_id):
        # a bare name litellm cannot place is almost always a typo
        try:
            import litellm

            litellm.get_llm_provider(model_id)
        except Exception:
            raise FactoryError(
                f"unknown model '{model_id}': use 'local' (the embedded model), 'local:/path.gguf', a litellm "
                "model string such as openai/gpt-4o-mini or anthropic/claude-haiku-4-5, or any name served at "
                "base_url (--base-url)"
            ) from None
    provider = model_id.split("/", 1)[0] if "/" in model_id else "litellm"
    return Endpoint(
        provider, model_id, model_id, "litellm", None, None, litellm_transport.supports_json_schema(model_id)
    )
