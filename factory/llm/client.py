"""The one way to call a model (DESIGN rule 1).

    async with LLMClient(LLMConfig(model="local"), store) as llm:
        result = await llm.complete(messages, response_model=MyModel, stage="demo")
        results = await llm.complete_many(requests)

A call never raises for a failed request: it returns a Result with ok=False and an error kind, and the
call log holds the same row (a call on the wire its caller cancels: "cancelled"). The one exception is a
store that cannot be written (a full disk): every call then raises StoreWriteError and nothing more is sent,
since an answer that cannot be kept is paid for twice; calls already on the wire finish into the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from typing import Any, AsyncIterator, Iterable

import orjson
from tqdm.auto import tqdm

from ..errors import SendingStopped
from ..store import Store, utcnow
from . import young_gc
from .batch.setup import batch_endpoint, batch_transport
from .calllog import CallLog
from .config import LLMConfig
from .cost import call_cost, price_map
from .keeper import LogKeeper
from .local import local_server
from .many import iter_results
from .progress import CallCounter, CallCounts
from .providers import Endpoint, resolve_endpoint
from .request import CANCELLED, Request, Result, call_params, request_key
from .sender import Sender, Tally
from .spend import SpendCap
from .streaming import http_transport
from .structured import (
    OutputInvalid,
    OutputSpec,
    feedback_messages,
    output_spec,
    response_format,
    with_schema_instruction,
)
from .transport import Reply, TransportError

DOWNGRADE = {"json_schema": "json_object", "json_object": "prompt"}


class LLMClient:
    def __init__(self, config: LLMConfig | None = None, store: Store | None = None, run_id: str | None = None):
        self.config = config or LLMConfig()
        self.store = store
        self.run_id = run_id
        self.endpoint: Endpoint | None = None
        self.keeper = LogKeeper()
        self._price = self.config.price.per_token() if self.config.price else None
        self.spend_cap = SpendCap(self.config.max_cost_usd, store.path if store is not None else None)
        self.sender: Sender | None = None
        self._mode = self.config.structured_mode
        self._semaphore = asyncio.Semaphore(self.config.in_flight())
        self._inflight: dict[str, asyncio.Future] = {}
        self._started = False
        self._start_lock = asyncio.Lock()
        self.counts = CallCounts()  # the calls sent (not cache hits): what progress bars show

    @property
    def log(self) -> CallLog | None:
        return self.keeper.log

    async def start(self) -> "LLMClient":  # -- lifecycle --
        if self._started:
            return self
        async with self._start_lock:  # concurrent first calls start the client once
            if not self._started:
                await self._start()
        return self

    async def _start(self) -> None:
        local_url = None
        if self.config.batch.enabled:  # decided (or refused) before the embedded model could start
            self.endpoint, self._price = batch_endpoint(self.config)
        elif (self.config.model or "local").startswith("local"):
            server = await asyncio.to_thread(local_server, self.config.model or "local", self.config.local)
            local_url = server.base_url
        self.endpoint = self.endpoint if self.config.batch.enabled else resolve_endpoint(self.config, local_url)
        self.spend_cap.require_price(self.endpoint.provider, self.endpoint.model, self._price)
        self.sender = Sender(
            self._make_transport(self.endpoint), self.config, self.keeper.before_attempt, self.keeper.attempt_sent
        )
        if self.endpoint.provider != "local":
            await asyncio.to_thread(price_map)  # read the price table now, not on the first reply
        if self._mode == "auto":
            self._mode = "json_schema" if self.endpoint.json_schema else "json_object"
        self.keeper.open(self.store)
        young_gc.client_opened()
        self._started = True

    def _make_transport(self, endpoint: Endpoint):
        if self.config.batch.enabled:
            return batch_transport(endpoint, self.config, self.store)
        if endpoint.transport == "litellm":
            from .litellm_transport import LiteLLMTransport

            return LiteLLMTransport(endpoint.model, endpoint.api_key, endpoint.base_url, self.config.timeout_s)
        return http_transport(endpoint, self.config)

    async def close(self, on_error: bool = False) -> None:
        """Flush and close; raises StoreWriteError when the call log could not be written.
        on_error: the batch is ending on an exception; its calls still on the wire finish first."""
        try:
            await self.keeper.close(list(self._inflight.values()), self.config.close_wait_s(), on_error)
            if self.sender is not None:
                await self.sender.close()
        finally:
            if self._started:
                young_gc.client_closed()
            self._started = False
        self.keeper.check()

    async def __aenter__(self) -> "LLMClient":
        return await self.start()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        # Ctrl-C or a cancellation ends at once; any other error waits for the answers already paid for.
        await self.close(on_error=isinstance(exc, Exception))

    # -- public calls ------------------------------------------------------
    async def complete(self, messages: list[dict[str, Any]], response_model=None, **kwargs: Any) -> Result:
        """One chat completion. kwargs: stage, sample_index, tag, and request params."""
        fields = {k: kwargs.pop(k) for k in ("stage", "sample_index", "tag") if k in kwargs}
        return await self.run(Request(messages, response_model, params=kwargs, **fields))

    async def run(self, request: Request) -> Result:
        """Run one Request; never raises for a failed call (see Result.error_kind),
        only StoreWriteError once the call log cannot be written."""
        await self.start()
        self.keeper.check_can_send()
        spec = output_spec(request.response_model) if request.response_model is not None else None
        params = call_params(self.config, request)
        key = request_key(
            self.endpoint.model_id, self.config.cache_namespace, request.messages, params,
            spec.schema_json if spec else None, request.sample_index,
        )  # fmt: skip
        if self.config.cache and self.log is not None:
            cached = self._from_cache(key, spec, request.tag)
            if cached is not None:
                return cached
        if key in self._inflight:  # the same request is already on its way: share its answer
            return dataclasses.replace(await asyncio.shield(self._inflight[key]), tag=request.tag)
        future = self._inflight[key] = asyncio.get_running_loop().create_future()
        try:
            result = await self._guarded_call(request, spec, params, key)
            self.counts.add(result, self.endpoint.provider)
            future.set_result(result)
            return result
        except SendingStopped as exc:
            future.set_exception(type(exc)(str(exc)))  # twins waiting on this call stop too
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            del self._inflight[key]
            if not future.done():  # cancelled: waiters get the cancellation, not a hang
                future.cancel()

    async def _guarded_call(self, request: Request, spec, params: dict[str, Any], key: str) -> Result:
        try:
            async with self._semaphore:  # the cap is checked with a slot in hand: at most `concurrency` calls past it
                self.spend_cap.check(self.log.spent_usd if self.log is not None else self.counts.cost_usd)
                try:
                    return await self._call(request, spec, params, key)
                except asyncio.CancelledError:  # a call on the wire its caller gave up: say so, not "lost"
                    if key in self.keeper.on_wire:
                        with contextlib.suppress(Exception):  # best effort: a run torn down may have closed its log
                            self._record(request, spec, params, Result(key, False, error_kind="cancelled", error=CANCELLED), None, utcnow(), now=True)  # fmt: skip  # noqa: E501
                    raise
        except SendingStopped:
            raise  # not one request's failure: the batch must stop
        except Exception as exc:  # a bug must not take the batch down: record it
            result = Result(key, False, error_kind="internal", error=f"{type(exc).__name__}: {exc}", tag=request.tag)
            self._record(request, spec, params, result, None, utcnow(), now=True)
            return result

    async def iter_complete(self, requests: Iterable[Request]) -> AsyncIterator[tuple[int, Result]]:
        """Yield (index, result) as calls finish, keeping a bounded number in flight."""
        async for item in iter_results(self.run, requests, self.config.in_flight() * 2):
            yield item

    async def complete_many(self, requests: Iterable[Request], progress=True, desc="llm") -> list[Result]:
        """Run requests concurrently; results come back in request order."""
        requests = list(requests)
        results: list[Result | None] = [None] * len(requests)
        with tqdm(total=len(requests), desc=desc, disable=not progress, unit="call") as bar, CallCounter([self], bar):
            async for index, result in self.iter_complete(requests):
                results[index] = result
                bar.update(1)
        return results  # type: ignore[return-value]

    def _from_cache(self, key: str, spec: OutputSpec | None, tag: Any) -> Result | None:  # -- internals --
        row = self.log.cached(key)
        if row is None:
            return None
        parsed, notes = None, ()
        if spec is not None:
            try:
                parsed, _, notes = spec.parse(row["response"], settle=True)
            except OutputInvalid:  # the model's validators changed since: ask again
                return None
        self.log.hit(key)
        return Result(
            key, True, row["response"], parsed, finish_reason=row["finish_reason"], cached=True,
            prompt_tokens=row["prompt_tokens"], completion_tokens=row["completion_tokens"],
            cost_usd=row["cost_usd"], latency_s=row["latency_s"], tag=tag, notes=notes,
        )  # fmt: skip

    def _body(self, messages: list[dict[str, Any]], spec: OutputSpec | None, params: dict[str, Any]) -> dict:
        body = {"model": self.endpoint.model, "messages": messages, **params}
        if spec is not None:
            fmt = response_format(spec, self._mode)
            if fmt is not None:
                body["response_format"] = fmt
        return body

    def _conversation(self, request: Request, spec: OutputSpec | None) -> list[dict[str, Any]]:
        if spec is not None and self._mode != "json_schema":
            return with_schema_instruction(request.messages, spec)
        return list(request.messages)

    async def _call(self, request: Request, spec: OutputSpec | None, params: dict[str, Any], key: str) -> Result:
        started, clock = utcnow(), time.perf_counter()
        fixed = self._fixed_columns(request, spec, params, key, started) if self.log is not None else None
        if fixed is not None:
            self.keeper.begin(key, fixed)
        tally = Tally()
        params = dict(params)
        conversation = self._conversation(request, spec)
        reply: Reply | None = None
        parsed = jsonable = None
        error_kind = error = None
        notes: tuple[str, ...] = ()
        rounds = 0
        while rounds <= self.config.max_parse_retries:
            rounds += 1
            try:
                reply = await self.sender.send(self._body(conversation, spec, params), tally, key)
            except TransportError as exc:
                if exc.kind == "unsupported_format" and spec is not None and self._mode in DOWNGRADE:
                    self._mode = DOWNGRADE[self._mode]  # the backend rejected the format: use a simpler one
                    conversation = self._conversation(request, spec)
                    rounds -= 1
                    continue
                error_kind, error = exc.kind, str(exc)
                break
            error_kind, error = reply.problem()
            if error_kind in ("content_filter", "refusal"):
                break  # the same prompt would be refused again
            if spec is not None:
                try:
                    last_try = rounds > self.config.max_parse_retries
                    parsed, jsonable, notes = spec.parse(reply.content, settle=last_try)
                    error_kind = error = None
                    break
                except OutputInvalid as exc:
                    error_kind = error_kind or "schema"
                    error = f"{error}; {exc}" if error else str(exc)
                    conversation = conversation + feedback_messages(reply.content, error)
            elif error_kind is None:
                break
            if reply.finish_reason == "length":
                params["max_tokens"] = min(self.config.max_tokens_cap, int(params.get("max_tokens") or 512) * 2)
        result = Result(
            key, error_kind is None, reply.content if reply else None, parsed, error_kind, error,
            reply.finish_reason if reply else None, False, tally.attempts, tally.prompt_tokens,
            tally.completion_tokens, call_cost(self.endpoint.provider, self.endpoint.model,
            tally.prompt_tokens, tally.completion_tokens, self._price), time.perf_counter() - clock, request.tag, notes,
            tally.batch_id,
        )  # fmt: skip
        await self.keeper.committed(self._record(request, spec, params, result, jsonable, started, fixed))
        return result

    def _fixed_columns(self, request: Request, spec, params, key: str, started) -> dict[str, Any]:
        """The call-log columns known before the call is sent."""
        return {
            "request_hash": key, "run_id": self.run_id, "stage": request.stage,
            "provider": self.endpoint.provider, "model": self.endpoint.model_id,
            "namespace": self.config.cache_namespace, "sample_index": request.sample_index,
            "params": orjson.dumps(params).decode(), "messages": orjson.dumps(request.messages).decode(),
            "response_schema": spec.schema_json if spec else None, "started_at": started,
        }  # fmt: skip

    def _record(self, request: Request, spec, params, result: Result, jsonable, started, fixed=None,
                now: bool = False) -> asyncio.Future | None:  # fmt: skip
        """Queue the call's row (see LogKeeper.record)."""
        if self.log is None:
            return None
        fixed = fixed or self._fixed_columns(request, spec, params, result.request_hash, started)
        return self.keeper.record({
            **fixed, "params": orjson.dumps(params).decode(), "response": result.text,  # params: max_tokens may grow
            "parsed": orjson.dumps(jsonable).decode() if jsonable is not None else None,
            "finish_reason": result.finish_reason, "status": "ok" if result.ok else "error",
            "error_kind": result.error_kind, "error": result.error or "; ".join(result.notes) or None,
            "attempts": result.attempts, "batch_id": result.batch_id,
            "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cost_usd": result.cost_usd, "latency_s": result.latency_s, "finished_at": utcnow(),
        }, now)  # fmt: skip
