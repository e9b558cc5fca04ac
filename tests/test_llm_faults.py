"""The client against a real loopback HTTP server that injects faults."""

import asyncio
import json

from loopback_server import VALID_TOOL, Action, ok
from pydantic import BaseModel, Field

from factory.llm import LLMClient, Request
from factory.store import Store


class Tool(BaseModel):
    name: str
    description: str
    parameters: list[str] = Field(min_length=1, max_length=4)


def ask(marker: str, index: int = 0) -> Request:
    return Request([{"role": "user", "content": f"make a tool {marker}"}], Tool, stage="t", sample_index=index)


def run_batch(config, requests, store=None):
    async def go():
        async with LLMClient(config, store) as llm:
            return await llm.complete_many(requests, progress=False), llm

    return asyncio.run(go())


def test_429_with_retry_after_is_honoured(server, fast_config):
    server.route("m429", Action(status=429, headers={"Retry-After": "0.4"}), ok())
    [result], _ = run_batch(fast_config(), [ask("m429")])
    assert result.ok and result.attempts == 2
    first, second = server.requests[0]["time"], server.requests[1]["time"]
    assert second - first >= 0.38  # waited as told, not on the 10 ms backoff


def test_500_then_success(server, fast_config):
    server.route("m500", Action(status=500), Action(status=503), ok())
    [result], _ = run_batch(fast_config(), [ask("m500")])
    assert result.ok and result.attempts == 3
    assert isinstance(result.parsed, Tool)


def test_slow_reply_times_out_then_retries(server, fast_config):
    server.route("slow", Action(delay_s=2.0), ok())
    [result], _ = run_batch(fast_config(timeout_s=0.3), [ask("slow")])
    assert result.ok and result.attempts == 2


def test_cut_off_http_body_is_retried(server, fast_config):
    server.route("cut", Action(body='{"choices": [{"message": {"content": "{\\"na'), ok())
    [result], _ = run_batch(fast_config(), [ask("cut")])
    assert result.ok and result.attempts == 2


def test_schema_violation_is_fed_back_and_fixed(server, fast_config):
    bad = {"name": "x", "description": "d", "parameters": []}  # min_length=1 violated
    server.route("schema", ok(bad), ok(VALID_TOOL))
    [result], _ = run_batch(fast_config(), [ask("schema")])
    assert result.ok and result.parsed.name == VALID_TOOL["name"]
    retry_messages = server.requests[1]["body"]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": json.dumps(bad)}
    assert "parameters" in retry_messages[-1]["content"]  # the validation error names the field
    assert server.requests[0]["body"]["response_format"]["type"] == "json_schema"


def test_truncated_json_at_length_retries_with_more_room(server, fast_config):
    server.route("trunc", Action(content='{"name": "track', finish_reason="length"), ok())
    [result], _ = run_batch(fast_config(max_tokens=100), [ask("trunc")])
    assert result.ok
    assert [r["body"]["max_tokens"] for r in server.requests] == [100, 200]


def test_unstructured_length_is_an_error_not_a_silent_success(server, fast_config):
    server.route("long", *[Action(content="cut mid-sent", finish_reason="length")] * 3)
    [result], _ = run_batch(fast_config(max_parse_retries=2), [Request([{"role": "user", "content": "long"}])])
    assert not result.ok and result.error_kind == "length"
    assert result.text == "cut mid-sent"


def test_content_filter_and_auth_errors_are_not_retried(server, fast_config):
    server.route("filter", Action(content="", finish_reason="content_filter"))
    server.route("auth", Action(status=401))
    results, _ = run_batch(fast_config(), [ask("filter"), ask("auth")])
    assert [r.error_kind for r in results] == ["content_filter", "auth"]
    assert [r.attempts for r in results] == [1, 1]


def test_unsupported_response_format_falls_back_to_schema_in_prompt(server, fast_config):
    rejection = Action(status=400, body='{"error": "response_format json_schema is not supported"}')
    server.route("fmt", rejection, ok())
    [result], llm = run_batch(fast_config(), [ask("fmt")])
    assert result.ok
    second = server.requests[1]["body"]
    assert second["response_format"] == {"type": "json_object"}
    assert "JSON schema" in second["messages"][0]["content"]


def test_many_429s_trigger_a_shared_cooldown(server, fast_config):
    for i in range(10):
        server.route(f"burst{i} ", Action(status=429), ok())
    requests = [ask(f"burst{i} ") for i in range(10)]
    results, llm = run_batch(fast_config(cooldown_burst=5, concurrency=10), requests)
    assert all(r.ok for r in results)
    assert llm.sender.cooldown.pauses >= 1


def test_a_faulty_batch_finishes_and_records_every_request(server, fast_config, tmp_path):
    """Persistent failures become error rows; the rest of the batch succeeds."""
    server.route("dead", *[Action(status=500)] * 10)
    server.route("junk", *[ok("this is not json")] * 10)
    server.route("hang", *[Action(delay_s=3)] * 10)
    markers = ["dead", "junk", "hang"] + [f"fine{i} " for i in range(20)]
    store = Store(tmp_path / "f.sqlite")
    results, _ = run_batch(fast_config(timeout_s=0.2, max_retries=2), [ask(m) for m in markers], store)
    kinds = {m: r.error_kind for m, r in zip(markers, results)}
    assert kinds["dead"] == "server" and kinds["junk"] == "schema" and kinds["hang"] == "timeout"
    assert sum(r.ok for r in results) == 20
    rows = store.query("SELECT status, error_kind, attempts FROM llm_calls ORDER BY status, error_kind")
    assert len(rows) == 23
    assert ("error", "server", 3) in rows and ("error", "timeout", 3) in rows


def test_plain_json_schema_dict_is_validated_with_jsonschema(server, fast_config):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    server.route("dict", ok({"n": "seven"}), ok({"n": 7}))
    req = Request([{"role": "user", "content": "dict"}], schema)
    [result], _ = run_batch(fast_config(), [req])
    assert result.ok and result.parsed == {"n": 7}
