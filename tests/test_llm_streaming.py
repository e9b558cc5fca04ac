"""Streamed replies (the embedded model's default): only silence times out, never a reply still coming.

Over real HTTP to the loopback server, which streams server-sent events as OpenAI and llama.cpp do.
"""

import asyncio
import os

import pytest
from loopback_server import Action, provider_error

from factory.llm import LLMClient, Request
from factory.llm.config import LocalModelConfig
from factory.llm.inflight import IN_FLIGHT, describe, since
from factory.llm.local import busy_elsewhere, chosen_threads, decode_rate
from factory.llm.streaming import StreamedReply, StreamingTransport
from factory.store import Store

WORDS = "the reply keeps coming one token at a time " * 3  # 33 tokens of 4 characters


def call(config, text="question", store=None):
    async def go():
        async with LLMClient(config, store) as llm:
            return await llm.run(Request([{"role": "user", "content": text}]))

    return asyncio.run(go())


def test_a_reply_slower_than_the_timeout_but_still_coming_is_not_cut_or_resent(server, fast_config, tmp_path):
    server.route("question", Action(content=WORDS, token_gap_s=0.05))  # ~1.7 s in all, a token every 0.05 s
    store = Store(tmp_path / "s.sqlite")
    result = call(fast_config(timeout_s=0.5, stream=True), store=store)
    assert result.ok, result.error
    assert result.text == WORDS and result.completion_tokens == 33
    assert len(server.requests) == 1 and server.requests[0]["body"]["stream"] is True
    assert store.query("SELECT attempts, status FROM llm_calls") == [(1, "ok")]


def test_the_same_reply_unstreamed_times_out_and_is_sent_again(server, fast_config):
    server.route("question", *[Action(content=WORDS, delay_s=1.0)] * 3)  # whole reply after 1 s
    result = call(fast_config(timeout_s=0.5, stream=False, max_retries=1))
    assert not result.ok and result.error_kind == "timeout"
    assert len(server.requests) == 2  # the contrast: a whole-reply deadline resends from zero


def test_a_server_that_falls_silent_times_out_and_says_where(server, fast_config):
    server.route("question", Action(content=WORDS, stall_after=3), Action(content="fine"))
    start = IN_FLIGHT.snapshot()
    result = call(fast_config(timeout_s=0.4, stream=True, max_retries=1))
    assert result.ok and result.text == "fine"  # the retry after the silence got its reply
    assert len(server.requests) == 2
    figures = since(start)
    assert (figures["timeouts"], figures["retries"], figures["on_the_wire"]) == (1, 1, 0)
    assert figures["streamed_tokens"] >= 3


def test_the_timeout_message_counts_the_tokens_read(server, fast_config):
    server.route("question", Action(content=WORDS, stall_after=2))
    result = call(fast_config(timeout_s=0.3, stream=True, max_retries=0))
    assert result.error_kind == "timeout"
    assert "no reply bytes for 0.3s (after 2 streamed tokens)" in result.error


def test_errors_before_and_inside_the_stream_are_classified(server, fast_config):
    server.route("first", Action(status=429, headers={"Retry-After": "0"}), Action(content="ok"))
    assert call(fast_config(stream=True), "first").text == "ok"
    server.route("second", provider_error("model overloaded", type="server_error", status=200))
    broken = call(fast_config(stream=True, max_retries=0), "second")
    assert broken.error_kind == "server"


def test_attempts_on_the_wire_show_while_they_stream(server, fast_config):
    server.route("question", Action(content=WORDS, token_gap_s=0.05))
    start = IN_FLIGHT.snapshot()

    async def go():
        async with LLMClient(fast_config(stream=True)) as llm:
            task = asyncio.create_task(llm.run(Request([{"role": "user", "content": "question"}])))
            await asyncio.sleep(0.8)
            seen = since(start)
            await task
            return seen

    seen = asyncio.run(go())
    assert seen["on_the_wire"] == 1 and seen["streaming_tokens"] > 3 and seen["oldest_s"] >= 0.5
    assert describe(seen).startswith("on the wire 1 (oldest ")


def test_stream_chunks_assemble_content_tool_calls_and_usage():
    parts = StreamedReply()
    chunks = [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "find", "arguments": '{"q'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '": "x"}'}}]}}]},
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 4}},
    ]  # fmt: skip
    assert [parts.add(c) for c in chunks] == [1, 1, 0, 0]
    reply = parts.reply()
    assert reply.finish_reason == "tool_calls" and (reply.prompt_tokens, reply.completion_tokens) == (7, 4)
    assert reply.content == '<tool_call>\n{"name":"find","arguments":{"q":"x"}}\n</tool_call>'  # as unstreamed


def test_the_embedded_model_streams_by_default_and_other_servers_do_not():
    from factory.llm.config import LLMConfig
    from factory.llm.providers import Endpoint
    from factory.llm.streaming import http_transport

    local = Endpoint("local", "local", "local", "openai", "http://127.0.0.1:1/v1")
    hosted = Endpoint("openai", "gpt-4o-mini", "gpt-4o-mini", "openai", "http://127.0.0.1:1/v1")
    assert isinstance(http_transport(local, LLMConfig()), StreamingTransport)
    assert not isinstance(http_transport(hosted, LLMConfig(model="gpt-4o-mini")), StreamingTransport)
    assert isinstance(http_transport(hosted, LLMConfig(model="gpt-4o-mini", stream=True)), StreamingTransport)


def test_threads_follow_the_cores_free_now():
    assert chosen_threads(LocalModelConfig(threads=3), cores=2, busy=9.0) == (3, "llm.local.threads")
    assert chosen_threads(LocalModelConfig(), cores=2, busy=0.1)[0] == 2  # a quiet machine: every core
    assert chosen_threads(LocalModelConfig(), cores=2, busy=3.9) == (1, "2 cores, 3.9 busy with other work")
    assert chosen_threads(LocalModelConfig(), cores=16, busy=4.2)[0] == 12


def test_busy_cores_count_other_processes_not_this_one(monkeypatch):
    """The arithmetic on /proc's tick counters (how busy the machine really is cannot be a test's input)."""
    from factory.llm import local

    class Clock:  # the window lasts what it asks for, however busy the machine
        now = 100.0

        def monotonic(self):
            return self.now

        def sleep(self, seconds):
            self.now += seconds

    hz = os.sysconf("SC_CLK_TCK")
    # over a 0.5 s window: every CPU together 3 cores' worth of ticks, this process 1 core's worth
    ticks = iter([(10_000, 500), (10_000 + 3 * hz // 2, 500 + hz // 2)])
    monkeypatch.setattr(local, "cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(local, "time", Clock())
    assert busy_elsewhere(0.5) == pytest.approx(2.0)


def test_busy_cores_are_read_from_this_machine():
    assert 0 <= busy_elsewhere(0.1) <= os.cpu_count() + 0.5


def test_the_decode_rate_is_llama_cpps_own_timing_else_tokens_over_time():
    assert decode_rate({"timings": {"predicted_per_second": 41.5}}, 9.0) == 41.5
    assert decode_rate({"usage": {"completion_tokens": 16}}, 2.0) == 8.0
    assert decode_rate({}, 2.0) is None
