"""What the loopback batch servers (batch_openai_server.py, batch_anthropic_server.py) share.

A real aiohttp server on 127.0.0.1 in a thread of its own. Each request of a batch is answered the
way LoopbackServer answers a chat call (its routes and default content), so a test scripts a batch's
lines the way it scripts plain chat calls. A batch advances one state per poll; `hold()` keeps batches in progress
until `release()`, `expire_next(k)` ends the next batch created after its first k requests.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from loopback_server import LoopbackServer

GARBLED = "<garbled>"  # Action(body=GARBLED): this request's output line is written cut short


class BatchServerBase(LoopbackServer):
    """A LoopbackServer (its routes and default content answer each request of a batch, its thread
    serves) whose app speaks a batch protocol instead of chat completions."""

    def __init__(self, api_key: str | None = None):
        super().__init__()
        self.api_key = api_key
        self.batches: dict[str, dict[str, Any]] = {}
        self.creates: list[str] = []  # batch ids, in the order they were created
        self.polls: list[str] = []  # batch ids, one per status request
        self.answered: list[dict[str, Any]] = []  # every request body a batch ran, in OpenAI shape
        self.refuse_create: tuple[int, dict] | None = None  # (status, error body) for every create
        self.held = False
        self._expire: list[int] = []

    def hold(self) -> None:
        self.held = True

    def release(self) -> None:
        self.held = False

    def expire_next(self, ran: int) -> None:
        """The next batch created runs only its first `ran` requests, then expires."""
        self._expire.append(ran)

    def new_batch(self, batch_id: str, bodies: dict[str, dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            batch = {"id": batch_id, "bodies": bodies, "step": 0, "results": None,
                     "expire_after": self._expire.pop(0) if self._expire else None}  # fmt: skip
            self.batches[batch_id] = batch
            self.creates.append(batch_id)
        return batch

    def advance(self, batch: dict[str, Any]) -> None:
        """One step per poll: validating -> in progress -> (held) -> ended, answering its requests at the end."""
        self.polls.append(batch["id"])
        if batch["results"] is not None or (self.held and batch["step"] >= 1):
            return
        batch["step"] += 1
        if batch["step"] >= 2:
            ran = list(batch["bodies"].items())[: batch["expire_after"]]
            batch["results"] = {}
            for custom_id, body in ran:
                self.answered.append(body)
                batch["results"][custom_id] = self._next_action(body)

    def app(self) -> web.Application:
        raise NotImplementedError

    async def start_async(self, port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        self.base_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        return self.base_url


def bad_request(message: str, status: int = 400) -> web.Response:
    """An OpenAI-style error reply (Anthropic's shape is built by its server)."""
    return web.json_response({"error": {"message": message, "type": "invalid_request_error", "code": None}},
                             status=status)  # fmt: skip
