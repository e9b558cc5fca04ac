"""Call log rows and the per-request cache, on a real DuckDB file."""

import asyncio

from test_llm_faults import Tool, ask

from factory.llm import LLMClient
from factory.store import Store


def run(config, requests, store):
    async def go():
        async with LLMClient(config, store, run_id="r1") as llm:
            return await llm.complete_many(requests, progress=False)

    return asyncio.run(go())


def test_rerun_makes_zero_new_calls(server, fast_config, tmp_path):
    requests = [ask(f"q{i} ") for i in range(12)]
    store = Store(tmp_path / "s.sqlite")
    first = run(fast_config(), requests, store)
    sent = len(server.requests)
    second = run(fast_config(), requests, store)
    assert len(server.requests) == sent == 12
    assert all(r.cached and r.ok for r in second)
    assert [r.parsed for r in second] == [r.parsed for r in first]
    assert isinstance(second[0].parsed, Tool)
    assert store.query("SELECT sum(cache_hits), count(*) FROM llm_calls") == [(12, 12)]


def test_samples_of_one_prompt_are_distinct_entries(server, fast_config, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    results = run(fast_config(), [ask("same", index=i) for i in range(4)], store)
    assert len({r.request_hash for r in results}) == 4
    assert len(server.requests) == 4
    assert store.query("SELECT count(DISTINCT sample_index) FROM llm_calls") == [(4,)]


def test_identical_concurrent_requests_are_sent_once(server, fast_config, tmp_path):
    results = run(fast_config(), [ask("twin")] * 5, Store(tmp_path / "s.sqlite"))
    assert all(r.ok for r in results) and len(server.requests) == 1


def test_cache_off_and_namespaces(server, fast_config, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run(fast_config(), [ask("x")], store)
    run(fast_config(cache=False), [ask("x")], store)
    assert len(server.requests) == 2
    run(fast_config(cache_namespace="other"), [ask("x")], store)
    assert len(server.requests) == 3
    assert store.query("SELECT count(*) FROM llm_calls") == [(2,)]  # one row per key, no duplicates


def test_failed_requests_are_retried_on_rerun_and_replace_their_row(server, fast_config, tmp_path):
    from loopback_server import Action

    server.route("flaky", *[Action(status=500)] * 4)
    store = Store(tmp_path / "s.sqlite")
    [failed] = run(fast_config(), [ask("flaky")], store)
    assert not failed.ok
    [fixed] = run(fast_config(), [ask("flaky")], store)
    assert fixed.ok and not fixed.cached
    assert store.query("SELECT status, count(*) FROM llm_calls GROUP BY 1") == [("ok", 1)]


def test_call_row_holds_what_the_issue_lists(server, fast_config, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    run(fast_config(), [ask("row")], store)
    row = store.query_arrow("SELECT * FROM llm_calls").to_pandas().iloc[0]
    assert row.stage == "t" and row.model == "loopback" and row.run_id == "r1"
    assert '"temperature"' in row.params and "make a tool row" in row.messages
    assert row.status == "ok" and row.attempts == 1
    assert row.prompt_tokens == 10 and row.completion_tokens == 5
    assert row.latency_s > 0 and row.finished_at >= row.started_at
    assert '"track_parcel"' in row.parsed and '"properties"' in row.response_schema
    assert row.cost_usd is None or row.cost_usd != row.cost_usd  # unknown model: NULL, not 0


def test_known_models_are_priced_from_litellms_map():
    from factory.llm.cost import call_cost

    assert call_cost("openai", "gpt-4o-mini", 1000, 1000) > 0
    assert call_cost("openai_compatible", "my-finetune", 1000, 1000) is None
    assert call_cost("local", "local", 1000, 1000) is None


def test_unstructured_calls_and_stage_of_complete(server, fast_config, tmp_path):
    server.route("plain", __import__("loopback_server").ok("hello there"))

    async def go():
        async with LLMClient(fast_config(), Store(tmp_path / "s.sqlite")) as llm:
            return await llm.complete([{"role": "user", "content": "plain"}], stage="chat", temperature=0)

    result = asyncio.run(go())
    assert result.ok and result.text == "hello there" and result.parsed is None
    assert server.requests[0]["body"]["temperature"] == 0
    assert "response_format" not in server.requests[0]["body"]


def test_duplicates_in_flight_keep_their_own_tags(server, fast_config, tmp_path):
    from factory.llm import Request

    twins = [Request([{"role": "user", "content": "tagged"}], tag=name) for name in ("a", "b", "c")]
    results = run(fast_config(), twins, Store(tmp_path / "s.sqlite"))
    assert [r.tag for r in results] == ["a", "b", "c"] and len(server.requests) == 1


def test_concurrent_first_calls_start_the_client_once(server, fast_config, tmp_path):
    store = Store(tmp_path / "s.sqlite")

    async def go():
        llm = LLMClient(fast_config(), store)
        try:
            return await asyncio.gather(*[llm.run(ask(f"c{i} ")) for i in range(8)]), llm
        finally:
            await llm.close()

    results, llm = asyncio.run(go())
    assert all(r.ok for r in results)
    assert store.query("SELECT count(*) FROM llm_calls") == [(8,)]


def test_a_cached_reply_that_no_longer_validates_is_asked_again(server, fast_config, tmp_path):
    from pydantic import ConfigDict, field_validator

    store = Store(tmp_path / "s.sqlite")
    run(fast_config(), [ask("strict")], store)

    class StricterTool(Tool):  # same JSON schema, a new validator
        model_config = ConfigDict(title="Tool")

        @field_validator("name")
        @classmethod
        def no_track(cls, value):
            if value.startswith("track"):
                raise ValueError("no tracking tools")
            return value

    request = ask("strict")
    request.response_model = StricterTool
    [result] = run(fast_config(max_parse_retries=0), [request], store)
    assert not result.cached and len(server.requests) == 2  # a fresh call, not a crash
