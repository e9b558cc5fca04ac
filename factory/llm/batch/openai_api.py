"""The OpenAI Batch API: a JSONL file uploaded, a batch made from it, output and error files read back.

    POST {base}/files (multipart, purpose=batch)      -> {"id": "file-…"}
    POST {base}/batches {input_file_id, endpoint, completion_window}
    GET  {base}/batches/{id}                          -> status, request_counts, output/error_file_id
    GET  {base}/files/{id}/content                    -> JSONL, one line per request

An output line carries `response.status_code` and `response.body` (a chat completion); an error line
carries `error` (e.g. code batch_expired) or a response with an error status.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from ..transport import TransportError, classify_error_object, classify_reply, parse_completion
from .http import BatchHTTP
from .protocol import EXPIRED, BatchState, Outcome

CHAT_PATH = "/v1/chat/completions"
DONE = frozenset({"completed", "failed", "expired", "cancelled"})
FILE_KEYS = ("input_file_id", "output_file_id", "error_file_id")


class OpenAIBatchAPI:
    name = "openai"

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float, completion_window: str = "24h"):
        self.base_url = base_url.rstrip("/")
        self.window = completion_window
        self.http = BatchHTTP({"Authorization": f"Bearer {api_key}"} if api_key else {}, timeout_s)

    def encode(self, custom_id: str, body: dict[str, Any]) -> bytes:
        return orjson.dumps({"custom_id": custom_id, "method": "POST", "url": CHAT_PATH, "body": body}) + b"\n"

    async def submit(self, items: list[bytes]) -> BatchState:
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", b"".join(items), filename="factory-batch.jsonl", content_type="application/jsonl")
        uploaded = orjson.loads(await self.http.call("POST", f"{self.base_url}/files", data=form))
        create = {"input_file_id": uploaded["id"], "endpoint": CHAT_PATH, "completion_window": self.window}
        return self._state(await self.http.call("POST", f"{self.base_url}/batches", json=create))

    async def poll(self, batch_id: str) -> BatchState:
        return self._state(await self.http.call("GET", f"{self.base_url}/batches/{batch_id}"))

    def _state(self, payload: bytes) -> BatchState:
        try:
            data = orjson.loads(payload)
            status = str(data["status"])
            counts = {k: int(v) for k, v in (data.get("request_counts") or {}).items()}
            files = {k: str(data[k]) for k in FILE_KEYS if data.get(k)}
            errors = (data.get("errors") or {}).get("data") or []
            error = "; ".join(str(e.get("message") or e.get("code")) for e in errors) or None
            return BatchState(str(data["id"]), status, status in DONE, counts, files, error)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            raise TransportError("bad_response", f"not a batch object: {payload[:200]!r}") from None

    async def results(self, state: BatchState) -> dict[str, Outcome]:
        outcomes: dict[str, Outcome] = {}
        for key in ("error_file_id", "output_file_id"):  # an output line wins over an error line
            if key in state.files:
                content = await self.http.call("GET", f"{self.base_url}/files/{state.files[key]}/content")
                outcomes.update(read_lines(content))
        return outcomes

    async def close(self) -> None:
        await self.http.close()


def read_lines(content: bytes) -> dict[str, Outcome]:
    """custom id -> its outcome; lines that cannot be read are skipped (their requests count as missing)."""
    outcomes: dict[str, Outcome] = {}
    for line in content.splitlines():
        try:
            data = orjson.loads(line)
            outcomes[str(data["custom_id"])] = line_outcome(data)
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            continue
    return outcomes


def line_outcome(data: dict[str, Any]) -> Outcome:
    response = data.get("response")
    if isinstance(response, dict) and response.get("body") is not None:
        status = int(response.get("status_code") or 0)
        body = orjson.dumps(response["body"])
        if status != 200:
            return classify_reply(status, body, {})
        try:
            return parse_completion(body)
        except TransportError as exc:
            return exc
    error = data.get("error") or {}
    if error.get("code") == "batch_expired":
        return TransportError("timeout", EXPIRED)
    if error.get("code") == "batch_cancelled":
        return TransportError("cancelled", "the batch was cancelled before this request ran")
    found = classify_error_object(error, 400, {}) if isinstance(error, dict) else None
    return found or TransportError("bad_request", f"batch request failed: {str(error)[:300]}")
