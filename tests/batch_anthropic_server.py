"""A loopback server speaking Anthropic's Message Batches API (create, poll, results stream).

It checks what a real one checks: x-api-key and anthropic-version headers; each request's custom_id
(^[a-zA-Z0-9_-]{1,64}$, unique) and params (model, an integer max_tokens, user/assistant messages,
system only at the top level, temperature within 0..1, no OpenAI-only fields). Requests are answered
by the scripted routes (batch_server_common.py) on an OpenAI-shaped view of the params, so one
script serves both protocols; results are JSONL lines of type succeeded, errored or expired.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from aiohttp import web
from batch_server_common import GARBLED, BatchServerBase

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PARAMS = {"model", "max_tokens", "messages", "system", "temperature", "top_p", "top_k", "stop_sequences", "metadata"}
STOP = {"stop": "end_turn", "length": "max_tokens"}


def error(message: str, status: int = 400, kind: str = "invalid_request_error") -> web.Response:
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def params_problem(params: Any) -> str | None:
    if not isinstance(params, dict) or not {"model", "max_tokens", "messages"} <= set(params):
        return "params need model, max_tokens and messages"
    if set(params) - PARAMS:
        return f"unknown params: {sorted(set(params) - PARAMS)}"
    if not isinstance(params["max_tokens"], int) or not 0 <= params.get("temperature", 0) <= 1:
        return "max_tokens must be an integer and temperature within 0..1"
    if any(m.get("role") not in ("user", "assistant") for m in params["messages"]):
        return "messages take roles user and assistant only (system is a top-level field)"
    return None


class AnthropicBatchServer(BatchServerBase):
    def __init__(self, api_key: str | None = None):
        super().__init__(api_key)
        self._ids = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 2**20, middlewares=[self._headers])
        app.router.add_post("/v1/messages/batches", self._create)
        app.router.add_get("/v1/messages/batches/{id}", self._status)
        app.router.add_get("/v1/messages/batches/{id}/results", self._results)
        return app

    @web.middleware
    async def _headers(self, request: web.Request, handler):
        if self.api_key and request.headers.get("x-api-key") != self.api_key:
            return error("invalid x-api-key", 401, "authentication_error")
        if request.headers.get("anthropic-version") != "2023-06-01":
            return error("anthropic-version header is required")
        return await handler(request)

    async def _create(self, request: web.Request) -> web.Response:
        if self.refuse_create is not None:
            return web.json_response(self.refuse_create[1], status=self.refuse_create[0])
        requests = (await request.json()).get("requests")
        if not isinstance(requests, list) or not requests:
            return error("requests must be a non-empty list")
        bodies: dict[str, dict[str, Any]] = {}
        for item in requests:
            custom_id = item.get("custom_id")
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id) or custom_id in bodies:
                return error(f"custom_id {custom_id!r} is invalid or repeated")
            problem = params_problem(item.get("params"))
            if problem:
                return error(f"{custom_id}: {problem}")
            params = item["params"]
            system = [{"role": "system", "content": params["system"]}] if "system" in params else []
            bodies[custom_id] = {**params, "messages": system + params["messages"]}  # OpenAI shape, for the script
        batch = self.new_batch(f"msgbatch_{next(self._ids)}", bodies)
        return web.json_response(self._object(batch))

    async def _status(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return error("no such batch", 404, "not_found_error")
        self.advance(batch)
        return web.json_response(self._object(batch))

    def _object(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["results"] is not None
        results = batch["results"] or {}
        counts = {"processing": 0 if ended else len(batch["bodies"]),
                  "succeeded": sum(1 for a in results.values() if a.status == 200),
                  "errored": sum(1 for a in results.values() if a.status != 200),
                  "canceled": 0, "expired": len(batch["bodies"]) - len(results) if ended else 0}  # fmt: skip
        url = f"{self.base_url}/v1/messages/batches/{batch['id']}/results" if ended else None
        return {"id": batch["id"], "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "results_url": url}  # fmt: skip

    async def _results(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch["results"] is None:
            return error("results are not ready", 404, "not_found_error")
        lines = [self._line(batch, custom_id) for custom_id in batch["bodies"]]
        return web.Response(body="\n".join(lines) + "\n", content_type="application/binary")

    def _line(self, batch: dict[str, Any], custom_id: str) -> str:
        action = batch["results"].get(custom_id)
        if action is None:
            return json.dumps({"custom_id": custom_id, "result": {"type": "expired"}})
        if action.body == GARBLED:
            return json.dumps({"custom_id": custom_id})[:20]
        if action.status != 200:
            kind = "api_error" if action.status >= 500 else "invalid_request_error"
            result = {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": "scripted"}}}
            return json.dumps({"custom_id": custom_id, "result": result})
        body = batch["bodies"][custom_id]
        text = action.content if action.content is not None else self.content(body)
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                   "content": [{"type": "text", "text": text}], "stop_reason": STOP.get(action.finish_reason, "end_turn"),
                   "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip
        return json.dumps({"custom_id": custom_id, "result": {"type": "succeeded", "message": message}})
