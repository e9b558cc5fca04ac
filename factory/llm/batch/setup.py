"""Batch mode's choices, made when the client starts: which batch protocol, where, at what price.

OpenAI's protocol serves `openai/…` models and any model with an OpenAI-compatible base_url (the
server must offer /files and /batches); Anthropic's serves `anthropic/…`. Every other model, the
embedded one included, has no batch API here: batch mode is refused before any call.
"""

from __future__ import annotations

import dataclasses
import os

from ...errors import ConfigError, MissingKeyError
from ...store import Store
from ..config import LLMConfig
from ..cost import prices
from ..providers import Endpoint, resolve_endpoint
from .anthropic_api import AnthropicBatchAPI
from .ledger import BatchLedger
from .openai_api import OpenAIBatchAPI
from .transport import BatchTransport

ANTHROPIC_BASE = "https://api.anthropic.com"
ANTHROPIC_BASE_ENVS = ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL")


def batch_protocol(config: LLMConfig) -> str:
    """ "openai" or "anthropic"; ConfigError (one line, before any call) for a model without a batch API."""
    model_id = (config.model or "local").strip()
    if model_id == "local" or model_id.startswith("local:"):
        raise ConfigError(
            "batch mode (--batch, llm.batch.enabled) needs a provider's batch API; the embedded local model has "
            "none: drop --batch, or use an openai/… or anthropic/… model or an OpenAI-compatible base_url"
        )
    if model_id.startswith("anthropic/"):
        return "anthropic"
    if config.base_url or model_id.startswith("openai/"):
        return "openai"
    raise ConfigError(
        f"batch mode (--batch, llm.batch.enabled) supports OpenAI (openai/…, or a base_url serving the OpenAI "
        f"Batch API) and Anthropic (anthropic/…) models; '{model_id}' has no batch API here: drop --batch"
    )


def batch_endpoint(config: LLMConfig) -> tuple[Endpoint, tuple[float, float] | None]:
    """The endpoint batches go to, and the price per token (input, output) they are charged at."""
    if batch_protocol(config) == "openai":
        plain = resolve_endpoint(config.model_copy(update={"transport": "openai"}))
        endpoint = dataclasses.replace(plain, transport="batch:openai")
    else:
        endpoint = anthropic_endpoint(config)
    return endpoint, batch_price(config, endpoint.provider, endpoint.model)


def anthropic_endpoint(config: LLMConfig) -> Endpoint:
    model_id = config.model.strip()
    from_env = next((os.environ[v].strip() for v in ANTHROPIC_BASE_ENVS if os.environ.get(v, "").strip()), None)
    key_env = config.api_key_env or "ANTHROPIC_API_KEY"
    key = os.environ.get(key_env) or None
    if key is None and not config.base_url:  # a proxy at base_url may take none
        raise MissingKeyError(f"model '{model_id}' needs an API key: set {key_env} in the environment")
    base = config.base_url or from_env or ANTHROPIC_BASE
    # The Messages API takes no response_format: json_schema=False puts the schema in the prompt.
    return Endpoint("anthropic", model_id.split("/", 1)[1], model_id, "batch:anthropic", base, key, False)


def batch_price(config: LLMConfig, provider: str, model: str) -> tuple[float, float] | None:
    """The config's own price (llm.price) times the discount; else litellm's batch price for the model;
    else its normal price times the discount; None when nobody priced the model."""
    if config.price is not None:
        return tuple(unit * config.batch.discount for unit in config.price.per_token())  # type: ignore[return-value]
    found = prices(provider, model, "_batches")
    if found is not None:
        return found
    plain = prices(provider, model)
    return None if plain is None else (plain[0] * config.batch.discount, plain[1] * config.batch.discount)


def batch_transport(endpoint: Endpoint, config: LLMConfig, store: Store | None) -> BatchTransport:
    if endpoint.transport == "batch:anthropic":
        api = AnthropicBatchAPI(endpoint.base_url, endpoint.api_key, config.timeout_s)
    else:
        api = OpenAIBatchAPI(endpoint.base_url, endpoint.api_key, config.timeout_s, config.batch.completion_window)
    return BatchTransport(api, BatchLedger(store, api.name, api.base_url), config.batch, max(config.max_retries, 1))
