"""Batch mode over Anthropic's Message Batches API: a real loopback server speaking the protocol
(batch_anthropic_server.py), real DuckDB and the real client; the refusals of batch mode."""

import asyncio
import json

import pytest
from batch_anthropic_server import AnthropicBatchServer
from batch_server_common import GARBLED
from loopback_server import Action, ok
from pydantic import BaseModel

from factory.errors import ConfigError
from factory.llm import LLMClient, LLMConfig, Request
from factory.passrate import ensure_rollouts
from factory.store import Store
from factory.tasks import load_tasks

BATCH_PRICE = (5e-07, 2.5e-06)  # litellm's claude-haiku-4-5 *_cost_per_token_batches


class Capital(BaseModel):
    city: str


@pytest.fixture
def batch_server():
    srv = AnthropicBatchServer(api_key="sk-ant-test")
    srv.start_in_thread()
    yield srv
    srv.stop()


@pytest.fixture
def batch_config(batch_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")

    def make(**batch):
        settings = {"enabled": True, "poll_interval_s": 0.05, "collect_window_s": 0.05, **batch}
        return LLMConfig(model="anthropic/claude-haiku-4-5", base_url=batch_server.base_url, backoff_base_s=0.01,
                         backoff_max_s=0.05, timeout_s=5, max_retries=3, batch=settings)  # fmt: skip

    return make


def test_passrate_runs_through_message_batches_at_batch_price(batch_server, batch_config, tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"question": "Capital of France?", "answer": "Paris"}) + "\n"
                    + json.dumps({"question": "Capital of Peru?", "answer": "Lima"}) + "\n")  # fmt: skip
    batch_server.route("France", *[ok("<answer>Paris</answer>")] * 2)
    batch_server.route("Peru", *[ok("<answer>Quito</answer>")] * 2)
    with Store.open(tmp_path / "run") as store:
        ensure_rollouts(store, load_tasks(path), batch_config(), n=2)  # temperature 1.0, a system prompt
        correct = dict(store.query("SELECT task_id, bool_and(correct) FROM rollouts GROUP BY 1"))
        calls = store.query("SELECT attempts, prompt_tokens, completion_tokens, cost_usd, batch_id FROM llm_calls")
    assert sorted(correct.values()) == [False, True] and len(batch_server.creates) == 1
    assert len(calls) == 4 and {row[4] for row in calls} == {batch_server.creates[0]}
    for attempts, prompt, completion, cost, _ in calls:
        assert attempts == 1 and cost == pytest.approx(prompt * BATCH_PRICE[0] + completion * BATCH_PRICE[1])
    first = next(iter(batch_server.batches[batch_server.creates[0]]["bodies"].values()))
    assert first["model"] == "claude-haiku-4-5" and first["messages"][0]["role"] == "system"


async def ask(config, store, prompts, response_model=None):
    async with LLMClient(config, store) as llm:
        requests = [Request([{"role": "user", "content": p}], response_model) for p in prompts]
        return await llm.complete_many(requests, progress=False)


def test_errored_expired_and_garbled_results_retry_and_schemas_go_in_the_prompt(batch_server, batch_config, tmp_path):
    batch_server.route("overloaded", Action(status=500), ok('{"city": "Oslo"}'))
    batch_server.route("garbled", Action(body=GARBLED), ok('{"city": "Bern"}'))
    batch_server.route("invalid", Action(status=400))
    batch_server.route("expired", ok('{"city": "Santiago"}'))  # taken only when its request runs
    batch_server.expire_next(3)  # the fourth request of the first batch expires
    prompts = ["overloaded: capital of Norway?", "garbled: capital of Switzerland?", "invalid request",
               "expired: capital of Chile?"]  # fmt: skip
    with Store.open(tmp_path) as store:
        results = asyncio.run(ask(batch_config(), store, prompts, Capital))
        states = [row[0] for row in store.query("SELECT state FROM llm_batches ORDER BY created_at")]
    overloaded, garbled, invalid, expired = results
    assert (overloaded.parsed, overloaded.attempts) == (Capital(city="Oslo"), 2)
    assert (garbled.parsed, garbled.attempts) == (Capital(city="Bern"), 2)
    assert (invalid.ok, invalid.error_kind, invalid.attempts) == (False, "bad_request", 1)
    assert (expired.parsed, expired.attempts) == (Capital(city="Santiago"), 2)
    assert states == ["ended", "ended"] and len(batch_server.creates) == 2
    system = batch_server.answered[0]["messages"][
        0
    ]  # no response_format reached the server: the schema is in the prompt
    assert system["role"] == "system" and '"title":"Capital"' in system["content"]


def test_an_unknown_key_stops_the_run_with_one_line(batch_server, batch_config, tmp_path, monkeypatch):
    from factory.llm.batch.transport import BatchRefused

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    with Store.open(tmp_path) as store, pytest.raises(BatchRefused, match="check the API key: HTTP 401"):
        asyncio.run(ask(batch_config(), store, ["hello"]))
    assert batch_server.creates == []


@pytest.mark.parametrize(
    ("model", "words"),
    [("local", "the embedded local model has none"), ("deepseek/deepseek-chat", "has no batch API here")],
)
def test_models_without_a_batch_api_are_refused_before_any_call(model, words, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "x")
    config = LLMConfig(model=model, batch={"enabled": True})
    with Store.open(tmp_path) as store, pytest.raises(ConfigError, match=words):
        asyncio.run(ask(config, store, ["hello"]))


def test_coa_refuses_batch_mode_with_one_line(tmp_path):
    from factory.coa.batch import run_coa
    from factory.run_config import FactoryConfig

    config = FactoryConfig(run_dir=str(tmp_path), llm={"model": "openai/gpt-4o-mini", "batch": {"enabled": True}})
    with pytest.raises(ConfigError, match="coa: batch mode .* is for single-shot stages"):
        run_coa(config, progress=False)


def test_batch_mode_leaves_a_pipeline_stage_fingerprint_as_it_was():
    from types import SimpleNamespace

    from factory.pipeline.stages import generation_inputs
    from factory.run_config import FactoryConfig

    def inputs(**llm):
        return generation_inputs("refine")(SimpleNamespace(config=FactoryConfig(llm={"model": "m", **llm})))

    assert inputs(batch={"enabled": True, "poll_interval_s": 5}) == inputs()  # the same requests: no rerun


def test_a_pipeline_with_a_coa_stage_refuses_batch_mode_before_any_stage(server, tmp_path, capsys):
    from test_pipeline import REPO, run
    from test_pipeline_coa import write_pipeline

    config = write_pipeline(tmp_path, server, REPO / "examples" / "filters.yaml")
    code, out, err = run(config, capsys, "--batch")
    assert code == 2 and err.count("\n") == 1 and "coa: batch mode (--batch) is for single-shot stages" in err
    assert "== 1/" not in out and server.requests == []
