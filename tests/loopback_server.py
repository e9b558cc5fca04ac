"""A small real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It answers /v1/chat/completions from a script: each request takes the next
action of the first route whose marker appears in its messages (or the
default action), so tests can inject 429s with Retry-After, 500s, slow replies,
cut-off bodies and schema-violating content. Every request is recorded.

Run standalone (for benchmarks and crash tests): python tests/loopback_server.py --delay 0.1
It prints its base URL on the first line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

HASH_HEADER = "X-Factory-Request-Hash"
VALID_TOOL = {"name": "track_parcel", "description": "Track a parcel by its number.", "parameters": ["number"]}


@dataclass
class Action:
    """What the server does with one request."""

    content: str | None = None  # reply text (None: the default content)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # a raw body instead of a chat completion
    delay_s: float = 0.0
    finish_reason: str = "stop"
    token_gap_s: float = 0.0  # streamed (a request with "stream": true): the pause before each token
    stall_after: int | None = None  # streamed: fall silent after this many tokens (a server that hangs)


def ok(content: Any = None, **kw: Any) -> Action:
    text = content if content is None or isinstance(content, str) else json.dumps(content)
    return Action(content=text, **kw)


def provider_error(
    message: str,
    type: str | None = None,
    code: Any = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
    nested: bool = True,
) -> Action:
    """A reply carrying an OpenAI-style error object, as OpenAI, vLLM, llama.cpp and LiteLLM's proxy
    send them ({"error": {message, type, param, code}}); nested=False: the flat shape of older vLLM
    ({"object": "error", message, type, param, code}). Some proxies send these under status 200."""
    fields = {"message": message, "type": type, "param": None, "code": code}
    body = {"error": fields} if nested else {"object": "error", **fields}
    return Action(status=status, body=json.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})


def completion(content: str, finish_reason: str = "stop", usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "loopback",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def sse(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def estimated_usage(prompt: str, content: str) -> dict[str, int]:
    """Token counts for recorded replies no provider metered: about 4 characters a token (an estimate)."""
    prompt_tokens, completion_tokens = len(prompt) // 4, len(content) // 4
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}  # fmt: skip


class LoopbackServer:
    def __init__(
        self, default: Action | None = None, content: Callable[[dict], str] | None = None, log_path=None, record=True
    ):
        self.default = default or Action()
        self.content = content or (lambda body: json.dumps(VALID_TOOL))
        self.routes: list[tuple[str, list[Action]]] = []
        self.requests: list[dict[str, Any]] = []  # {"body", "hash", "time"}
        self.log_path = log_path
        self.record = record  # off for long benchmarks, where the growing list would slow the server
        self._log = open(log_path, "a") if log_path else None
        self._lock = threading.Lock()
        self.base_url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    def route(self, marker: str, *actions: Action) -> None:
        """Requests whose messages contain `marker` take these actions in order."""
        self.routes.append((marker, list(actions)))

    def _next_action(self, body: dict[str, Any]) -> Action:
        text = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
        with self._lock:
            for marker, actions in self.routes:
                if marker in text and actions:
                    return actions.pop(0)
        return self.default

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw)
        entry = {"body": body, "hash": request.headers.get(HASH_HEADER), "time": time.monotonic()}
        if self.record:
            with self._lock:
                self.requests.append(entry)
        if self._log:
            self._log.write(json.dumps({"hash": entry["hash"]}) + "\n")
            self._log.flush()
        action = self._next_action(body)
        if action.delay_s:
            await asyncio.sleep(action.delay_s)
        if action.body is not None:
            return web.Response(status=action.status, text=action.body, headers=action.headers)
        if action.status != 200:
            error = {"error": {"message": f"scripted HTTP {action.status}", "code": action.status}}
            return web.json_response(error, status=action.status, headers=action.headers)
        content = action.content if action.content is not None else self.content(body)
        if body.get("stream"):
            return await self._stream(request, action, content)
        return web.json_response(completion(content, action.finish_reason), headers=action.headers)

    async def _stream(self, request: web.Request, action: Action, content: str) -> web.StreamResponse:
        """Server-sent events as OpenAI and llama.cpp send them: a chunk per token (4 characters here), then one
        with the finish reason, one with the usage (stream_options.include_usage), and [DONE]."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", **action.headers})
        await response.prepare(request)
        tokens = [content[i : i + 4] for i in range(0, len(content), 4)]
        for n, token in enumerate(tokens):
            if action.stall_after is not None and n >= action.stall_after:
                while request.transport is not None and not request.transport.is_closing():
                    await asyncio.sleep(0.05)  # silent until the client gives up and closes
                return response
            await asyncio.sleep(action.token_gap_s)
            await response.write(sse({"choices": [{"index": 0, "delta": {"content": token}, "finish_reason": None}]}))
        await response.write(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": action.finish_reason}]}))
        usage = {"prompt_tokens": 10, "completion_tokens": len(tokens), "total_tokens": 10 + len(tokens)}
        await response.write(sse({"choices": [], "usage": usage}) + b"data: [DONE]\n\n")
        return response

    async def start_async(self, port: int = 0) -> str:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", self._handle)
        # A test ends with replies still on the wire (a delayed route, a killed client): stopping cancels them
        # at once instead of waiting up to aiohttp's 60 s for them to finish.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=4096)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    def start_in_thread(self) -> str:
        """Serve from a background thread (its own event loop); returns the base URL."""
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.start_async())
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=serve, daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("loopback server did not start")
        return self.base_url

    async def _stop_async(self) -> None:
        """Close the server, then let the replies it cut off finish cancelling before the loop stops."""
        await self._runner.cleanup()
        cut_off = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in cut_off:
            task.cancel()
        await asyncio.gather(*cut_off, return_exceptions=True)

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._stop_async(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._log:
            self._log.close()

    def hashes(self) -> list[str]:
        with self._lock:
            return [r["hash"] for r in self.requests]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", help="append each request's hash to this JSONL file")
    parser.add_argument("--no-record", action="store_true", help="keep no request list in memory")
    args = parser.parse_args()
    server = LoopbackServer(default=Action(delay_s=args.delay), log_path=args.log, record=not args.no_record)
    serve_forever(server, args.port)


def serve_forever(server: "LoopbackServer", port: int = 0) -> None:
    """Run a server in this process until interrupted, printing its base URL first (for benchmarks)."""

    async def run() -> None:
        print(await server.start_async(port), flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
