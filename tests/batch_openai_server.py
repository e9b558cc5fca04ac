"""A loopback server speaking the OpenAI Batch API (files, batches, output and error files).

It checks what a real one checks: the Bearer key, the multipart upload (purpose=batch, a file part),
each JSONL line (custom_id unique, method POST, url /v1/chat/completions, a body with model and
messages), and the create call's endpoint and completion window. Requests are answered by the
scripted routes (batch_server_common.py): status 200 goes to the output file, other statuses and
expired requests (error code batch_expired) to the error file.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from aiohttp import web
from batch_server_common import GARBLED, BatchServerBase, bad_request
from loopback_server import Action, completion

CHAT = "/v1/chat/completions"


class OpenAIBatchServer(BatchServerBase):
    def __init__(self, api_key: str | None = None):
        super().__init__(api_key)
        self.files: dict[str, bytes] = {}
        self.uploads = 0
        self._ids = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 2**20, middlewares=[self._auth])
        app.router.add_post("/v1/files", self._upload)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches/{id}", self._status)
        app.router.add_get("/v1/files/{id}/content", self._content)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler):
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                                "code": "invalid_api_key"}}, status=401)  # fmt: skip
        return await handler(request)

    async def _upload(self, request: web.Request) -> web.Response:
        if not request.content_type.startswith("multipart/form-data"):
            return bad_request("expected a multipart/form-data upload")
        form = await request.post()
        part = form.get("file")
        if form.get("purpose") != "batch" or not hasattr(part, "file"):
            return bad_request("an upload needs purpose=batch and a file part")
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = part.file.read()
        self.uploads += 1
        return web.json_response(
            {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(self.files[file_id])}
        )

    def _lines(self, content: bytes) -> dict[str, dict[str, Any]] | str:
        bodies: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(content.splitlines(), 1):
            try:
                item = json.loads(line)
            except ValueError:
                return f"line {number} is not JSON"
            if set(item) != {"custom_id", "method", "url", "body"}:
                return f"line {number}: expected custom_id, method, url and body, got {sorted(item)}"
            if item["method"] != "POST" or item["url"] != CHAT or item["custom_id"] in bodies:
                return f"line {number}: bad method, url or a duplicate custom_id"
            if not isinstance(item["body"], dict) or not {"model", "messages"} <= set(item["body"]):
                return f"line {number}: the body needs model and messages"
            bodies[item["custom_id"]] = item["body"]
        return bodies or "the file has no requests"

    async def _create(self, request: web.Request) -> web.Response:
        if self.refuse_create is not None:
            return web.json_response(self.refuse_create[1], status=self.refuse_create[0])
        data = await request.json()
        if data.get("endpoint") != CHAT or data.get("completion_window") != "24h":
            return bad_request("endpoint must be /v1/chat/completions and completion_window 24h")
        if data.get("input_file_id") not in self.files:
            return bad_request(f"no file {data.get('input_file_id')}", 404)
        bodies = self._lines(self.files[data["input_file_id"]])
        if isinstance(bodies, str):
            return bad_request(bodies)
        batch = self.new_batch(f"batch_{next(self._ids)}", bodies)
        batch["input_file_id"] = data["input_file_id"]
        return web.json_response(self._object(batch))

    async def _status(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return bad_request("no such batch", 404)
        self.advance(batch)
        if batch["results"] is not None and "output_file_id" not in batch:
            self._write_files(batch)
        return web.json_response(self._object(batch))

    def _write_files(self, batch: dict[str, Any]) -> None:
        output, errors = [], []
        for custom_id in batch["bodies"]:
            action: Action | None = batch["results"].get(custom_id)
            line = {"id": f"batch_req_{custom_id[:8]}", "custom_id": custom_id, "response": None, "error": None}
            if action is None:
                line["error"] = {"code": "batch_expired", "message": "This request could not be executed before the "
                                 "completion window expired."}  # fmt: skip
                errors.append(json.dumps(line))
            elif action.body == GARBLED:
                output.append(json.dumps(line)[:25])
            elif action.status != 200:
                body = {"error": {"message": f"scripted HTTP {action.status}", "type": "server_error"
                                  if action.status >= 500 else "invalid_request_error", "code": None}}  # fmt: skip
                line["response"] = {"status_code": action.status, "request_id": "req", "body": body}
                errors.append(json.dumps(line))
            else:
                content = action.content if action.content is not None else self.content(batch["bodies"][custom_id])
                line["response"] = {"status_code": 200, "request_id": "req",
                                    "body": completion(content, action.finish_reason)}  # fmt: skip
                output.append(json.dumps(line))
        for key, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{next(self._ids)}"
                self.files[file_id] = ("\n".join(lines) + "\n").encode()
                batch[key] = file_id

    def _object(self, batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["results"] is not None
        expired = ended and len(batch["results"]) < len(batch["bodies"])
        status = (
            ("expired" if expired else "completed") if ended else ("validating", "in_progress")[min(batch["step"], 1)]
        )
        failed = sum(1 for a in (batch["results"] or {}).values() if a.status != 200)
        done = len(batch["results"] or {}) - failed
        return {"id": batch["id"], "object": "batch", "endpoint": CHAT, "status": status, "completion_window": "24h",
                "input_file_id": batch["input_file_id"], "output_file_id": batch.get("output_file_id"),
                "error_file_id": batch.get("error_file_id"), "errors": None,
                "request_counts": {"total": len(batch["bodies"]), "completed": done,
                                   "failed": failed + len(batch["bodies"]) - len(batch["results"] or batch["bodies"])}}  # fmt: skip

    async def _content(self, request: web.Request) -> web.Response:
        content = self.files.get(request.match_info["id"])
        if content is None:
            return bad_request("no such file", 404)
        return web.Response(body=content, content_type="application/octet-stream")
