"""Anthropic Message Batches: one JSON request holding every item, then a JSONL results stream.

    POST {base}/v1/messages/batches {"requests": [{"custom_id", "params"}]}
    GET  {base}/v1/messages/batches/{id}   -> processing_status (in_progress, canceling, ended), results_url
    GET  results_url                       -> JSONL: {"custom_id", "result": {"type": succeeded|errored|...}}

Bodies are written OpenAI-style by the client; translate() makes them Messages API params.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..transport import Reply, TransportError, classify_error_object
from .http import BatchHTTP
from .protocol import EXPIRED, BatchState, Outcome

VERSION = "2023-06-01"
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "content_filter"}
PASSED = ("top_p", "top_k", "metadata")  # the same name and meaning in both APIs; others (seed, ...) are dropped


def translate(body: dict[str, Any]) -> dict[str, Any]:
    """Messages API params for an OpenAI-style chat body: system messages become `system`, `stop` becomes
    stop_sequences, temperature is clamped to Anthropic's 0..1; response_format is dropped (batch mode
    puts the schema in the prompt for Anthropic)."""
    if (body.get("response_format") or {}).get("type") == "json_schema":  # the client then puts it in the prompt
        raise TransportError("unsupported_format", "the Messages API takes no response_format json_schema")
    system = [str(m.get("content") or "") for m in body["messages"] if m.get("role") == "system"]
    messages = [
        {"role": m["role"], "content": m.get("content") or ""} for m in body["messages"] if m.get("role") != "system"
    ]
    params: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": int(body.get("max_tokens") or 1024),
        "messages": messages,
    }
    if system:
        params["system"] = "\n\n".join(system)
    if body.get("temperature") is not None:
        params["temperature"] = min(1.0, float(body["temperature"]))
    if body.get("stop"):
        params["stop_sequences"] = [body["stop"]] if isinstance(body["stop"], str) else list(body["stop"])
    params.update({k: body[k] for k in PASSED if body.get(k) is not None})
    return params


class AnthropicBatchAPI:
    name = "anthropic"

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float):
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        headers = {"anthropic-version": VERSION, "content-type": "application/json"}
        self.http = BatchHTTP({**headers, "x-api-key": api_key} if api_key else headers, timeout_s)

    def encode(self, custom_id: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"custom_id": custom_id, "params": translate(body)})

    async def submit(self, items: list[bytes]) -> BatchState:
        data = b'{"requests":[' + b",".join(items) + b"]}"
        return self._state(await self.http.call("POST", f"{self.base_url}/v1/messages/batches", data=data))

    async def poll(self, batch_id: str) -> BatchState:
        return self._state(await self.http.call("GET", f"{self.base_url}/v1/messages/batches/{batch_id}"))

    def _state(self, payload: bytes) -> BatchState:
        try:
            data = orjson.loads(payload)
            status = str(data["processing_status"])
            counts = {k: int(v) for k, v in (data.get("request_counts") or {}).items()}
            files = {"results_url": str(data["results_url"])} if data.get("results_url") else {}
            return BatchState(str(data["id"]), status, status == "ended", counts, files)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise TransportError("bad_response", f"not a message batch: {payload[:200]!r}") from None

    async def results(self, state: BatchState) -> dict[str, Outcome]:
        if "results_url" not in state.files:
            return {}
        outcomes: dict[str, Outcome] = {}
        for line in (await self.http.call("GET", state.files["results_url"])).splitlines():
            try:
                data = orjson.loads(line)
                outcomes[str(data["custom_id"])] = result_outcome(data["result"])
            except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError):
                continue  # a line that cannot be read: its request counts as missing (retried)
        return outcomes

    async def close(self) -> None:
        await self.http.close()


def result_outcome(result: dict[str, Any]) -> Outcome:
    kind = result["type"]
    if kind == "succeeded":
        message = result["message"]
        text = "".join(b.get("text") or "" for b in message.get("content") or [] if b.get("type") == "text")
        usage = message.get("usage") or {}
        stop = message.get("stop_reason")
        return Reply(text, STOP_REASONS.get(stop, stop), usage.get("input_tokens"), usage.get("output_tokens"))
    if kind == "expired":
        return TransportError("timeout", EXPIRED)
    if kind == "canceled":
        return TransportError("cancelled", "the batch was cancelled before this request ran")
    error = (result.get("error") or {}).get("error") or result.get("error") or {}
    found = classify_error_object(error, 400, {}) if isinstance(error, dict) else None
    return found or TransportError("server", f"batch request errored: {str(error)[:300]}")
