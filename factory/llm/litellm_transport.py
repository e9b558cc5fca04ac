"""Transport through litellm, for providers whose APIs need translation
(Anthropic, Bedrock, Vertex, ...). Same interface as OpenAICompatTransport."""

from __future__ import annotations

import os
from typing import Any

from .transport import Reply, TransportError, classify_error_object, classify_status, error_object

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import


def _litellm():
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def missing_env_keys(model: str) -> list[str]:
    """The environment variables litellm says this model needs and does not have."""
    try:
        report = _litellm().validate_environment(model)
    except Exception:  # an unknown provider: let the first call say what is wrong
        return []
    return list(report.get("missing_keys") or [])


def supports_json_schema(model: str) -> bool:
    try:
        return bool(_litellm().supports_response_schema(model=model))
    except Exception:
        return False


def _to_transport_error(exc: Exception) -> TransportError:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    message = " ".join(str(exc).split())[:300]
    if "ContentPolicy" in name:
        return TransportError("content_filter", message, status)
    if "Timeout" in name:
        return TransportError("timeout", message, status)
    if "APIConnection" in name and not isinstance(status, int):
        return TransportError("connection", message, status)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        # litellm keeps the provider's error object in `body` (openai's errors): its type and code name the kind.
        body = getattr(exc, "body", None)
        error = error_object({"error": body} if isinstance(body, dict) and "error" not in body else body)
        found = classify_error_object(error, status, headers) if error is not None else None
        return found or classify_status(status, message, headers)
    if isinstance(status, str) and status:  # a 200 error object: litellm puts its code where the status goes
        found = classify_error_object({"message": message, "code": status}, 200, {})
        if found is not None:
            return found
    return TransportError("connection", f"{name}: {message}")


class LiteLLMTransport:
    def __init__(self, model: str, api_key: str | None, base_url: str | None, timeout_s: float):
        self.model = model
        self.extra: dict[str, Any] = {"timeout": timeout_s, "num_retries": 0}
        if base_url:
            self.extra["api_base"] = base_url
            # Self-hosted servers usually take no key, but litellm's OpenAI client insists on one.
            api_key = api_key or "no-key"
        if api_key:
            self.extra["api_key"] = api_key

    async def chat(self, body: dict[str, Any], request_hash: str | None = None) -> Reply:
        litellm = _litellm()
        request = {k: v for k, v in body.items() if k != "model"}
        try:
            response = await litellm.acompletion(model=self.model, **request, **self.extra)
        except Exception as exc:  # litellm raises its own exception tree; classify it
            raise _to_transport_error(exc) from None
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        return Reply(
            content=choice.message.content,
            finish_reason=choice.finish_reason,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            refusal=getattr(choice.message, "refusal", None),
        )

    async def close(self) -> None:
        return None
