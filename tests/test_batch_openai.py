"""Batch mode over the OpenAI Batch API: a real loopback server speaking the protocol (batch_openai_server.py),
real DuckDB, the real client and pass-rate stage; a killed run resumed from the batch id in its store."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from batch_openai_server import OpenAIBatchServer
from batch_server_common import GARBLED
from loopback_server import Action, ok

from factory.cli import main as factory_main
from factory.llm import LLMClient, LLMConfig, Request
from factory.llm.call_summary import format_call_summary, summarize_calls
from factory.passrate import ensure_rollouts
from factory.store import Store
from factory.tasks import load_tasks

QUESTIONS = {"What is the capital of France?": "Paris", "What is the capital of Spain?": "Madrid",
             "What is the capital of Peru?": "Lima"}  # fmt: skip
WRONG = "What is the capital of Spain?"  # answered wrong on purpose: the verdicts must differ per task
BATCH_PRICE = (7.5e-08, 3e-07)  # litellm's gpt-4o-mini *_cost_per_token_batches; its normal price is twice that


@pytest.fixture
def batch_server():
    srv = OpenAIBatchServer(api_key="sk-test")
    srv.start_in_thread()
    yield srv
    srv.stop()


@pytest.fixture
def batch_config(batch_server, monkeypatch):
    monkeypatch.setenv("BATCH_TEST_KEY", "sk-test")

    def make(**batch):
        settings = {"enabled": True, "poll_interval_s": 0.05, "collect_window_s": 0.05, **batch}
        return LLMConfig(model="gpt-4o-mini", base_url=batch_server.base_url + "/v1", api_key_env="BATCH_TEST_KEY",
                         backoff_base_s=0.01, backoff_max_s=0.05, timeout_s=5, max_retries=3, batch=settings)  # fmt: skip

    return make


def script_answers(target) -> None:
    for question, answer in QUESTIONS.items():
        target.route(question, *[ok(f"<answer>{'Rome' if question == WRONG else answer}</answer>")] * 2)


def task_file(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS.items()))
    return path


def rollout_rows(store):
    return store.query("SELECT task_id, sample_index, completion, correct FROM rollouts ORDER BY task_id, sample_index")


def call_rows(store):
    return store.query("SELECT status, attempts, prompt_tokens, completion_tokens, cost_usd, batch_id FROM llm_calls")


def test_passrate_in_batch_mode_equals_normal_mode_at_batch_price(server, batch_server, batch_config, tmp_path):
    tasks = load_tasks(task_file(tmp_path))
    script_answers(server)
    script_answers(batch_server)
    plain = LLMConfig(model="gpt-4o-mini", base_url=server.base_url, timeout_s=5)
    with Store.open(tmp_path / "plain") as store:
        ensure_rollouts(store, tasks, plain, n=2)
        plain_rollouts, plain_calls = rollout_rows(store), call_rows(store)
    with Store.open(tmp_path / "batch") as store:
        ensure_rollouts(store, tasks, batch_config(), n=2)
        batch_rollouts, batch_calls = rollout_rows(store), call_rows(store)
        [(state, requests, downloaded)] = store.query("SELECT state, requests, downloaded_at FROM llm_batches")
    assert batch_rollouts == plain_rollouts and len(batch_rollouts) == 6
    assert sorted(row[3] for row in batch_rollouts) == [False] * 2 + [True] * 4
    assert len(batch_server.creates) == 1 and (state, requests) == ("completed", 6) and downloaded is not None
    assert len(batch_calls) == 6 and {row[5] for row in batch_calls} == {batch_server.creates[0]}
    for status, attempts, prompt, completion, cost, _ in batch_calls:
        assert (status, attempts) == ("ok", 1)
        assert cost == pytest.approx(prompt * BATCH_PRICE[0] + completion * BATCH_PRICE[1])
    assert sum(row[4] for row in plain_calls) == pytest.approx(2 * sum(row[4] for row in batch_calls))
    shown = format_call_summary(summarize_calls(tmp_path / "batch"))
    assert "batch API: 1 batches (1 downloaded; the rest are followed by the next run), 6 calls answered" in shown


async def run_prompts(config, store, prompts):
    async with LLMClient(config, store) as llm:
        return await llm.complete_many([Request([{"role": "user", "content": p}]) for p in prompts], progress=False)


def test_a_queue_past_max_requests_is_split_into_batches(batch_server, batch_config, tmp_path):
    import asyncio

    with Store.open(tmp_path) as store:
        results = asyncio.run(run_prompts(batch_config(max_requests=2), store, [f"prompt {i}" for i in range(5)]))
    assert all(r.ok for r in results)
    assert [len(batch_server.batches[b]["bodies"]) for b in batch_server.creates] == [2, 2, 1]


@pytest.mark.timeout(60)
def test_the_synchronous_rate_limits_do_not_throttle_a_batch(batch_server, batch_config, tmp_path):
    import asyncio

    config = batch_config().model_copy(update={"rpm": 0.001, "tpm": 1.0})  # one request a day: a hang if applied
    with Store.open(tmp_path) as store:
        results = asyncio.run(run_prompts(config, store, [f"prompt {i}" for i in range(3)]))
    assert all(r.ok for r in results) and [len(batch_server.batches[b]["bodies"]) for b in batch_server.creates] == [3]


def test_failed_lines_are_retried_in_the_next_batch_and_a_400_is_a_failure_row(batch_server, batch_config, tmp_path):
    import asyncio

    batch_server.route("flaky", Action(status=500), ok("recovered"))
    batch_server.route("garbled", Action(body=GARBLED), ok("readable now"))
    batch_server.route("refused", Action(status=400), ok("never asked again"))
    with Store.open(tmp_path) as store:
        flaky, garbled, refused, fine = asyncio.run(
            run_prompts(batch_config(), store, ["flaky one", "garbled one", "refused one", "fine one"])
        )
        rows = dict(store.query("SELECT status || ':' || coalesce(error_kind, ''), count(*) FROM llm_calls GROUP BY 1"))
    assert (flaky.ok, flaky.text, flaky.attempts) == (True, "recovered", 2)
    assert (garbled.ok, garbled.text, garbled.attempts) == (True, "readable now", 2)
    assert (refused.ok, refused.error_kind, refused.attempts) == (False, "bad_request", 1)
    assert fine.ok and fine.attempts == 1
    assert len(batch_server.creates) == 2 and len(batch_server.batches[batch_server.creates[1]]["bodies"]) == 2
    assert rows == {"ok:": 3, "error:bad_request": 1}


def test_an_expired_batch_resubmits_its_unfinished_requests(batch_server, batch_config, tmp_path):
    import asyncio

    batch_server.expire_next(1)
    with Store.open(tmp_path) as store:
        results = asyncio.run(run_prompts(batch_config(), store, ["first", "second", "third"]))
        states = [row[0] for row in store.query("SELECT state FROM llm_batches ORDER BY created_at")]
    assert all(r.ok for r in results) and sorted(r.attempts for r in results) == [1, 2, 2]
    assert states == ["expired", "completed"]
    assert [len(batch_server.batches[b]["bodies"]) for b in batch_server.creates] == [3, 2]


def test_an_auth_error_on_create_is_one_line_and_exit_2(batch_server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BATCH_TEST_KEY", "sk-wrong")
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(task_file(tmp_path)), "--model", "gpt-4o-mini",
            "--base-url", batch_server.base_url + "/v1", "--api-key-env", "BATCH_TEST_KEY", "--batch", "--n", "1",
            "-q"]  # fmt: skip
    assert factory_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "error: the openai batch API refused a batch: check the API key: HTTP 401"
    )
    assert batch_server.creates == [] and "Traceback" not in "".join(err)


def test_the_spend_cap_counts_batch_answers_and_stops_the_next_round(batch_server, batch_config, tmp_path):
    import asyncio

    from factory.errors import SpendCapReached

    capped = batch_config().model_copy(update={"max_cost_usd": 1e-6})
    with Store.open(tmp_path) as store:
        first = asyncio.run(run_prompts(capped, store, ["one", "two", "three"]))  # nothing spent yet: all go
        with pytest.raises(SpendCapReached, match="spend cap reached"):
            asyncio.run(run_prompts(capped, store, ["four"]))
        [(spent,)] = store.query("SELECT sum(cost_usd) FROM llm_calls")
    assert all(r.ok for r in first) and len(batch_server.creates) == 1
    assert spent == pytest.approx(3 * (10 * BATCH_PRICE[0] + 5 * BATCH_PRICE[1]))


def test_a_command_ending_on_an_error_leaves_its_running_batch_for_the_next_run(batch_server, batch_config, tmp_path):
    import asyncio

    batch_server.hold()

    async def fail_while_the_batch_runs(store):
        async with LLMClient(batch_config(), store) as llm:
            calls = asyncio.ensure_future(llm.complete_many([Request([{"role": "user", "content": "slow"}])], False))
            while len(batch_server.polls) < 2:
                await asyncio.sleep(0.01)
            raise RuntimeError("another task failed")
        await calls

    with Store.open(tmp_path) as store:
        with pytest.raises(RuntimeError, match="another task failed"):
            asyncio.run(fail_while_the_batch_runs(store))  # the close waits for no batch: the next run follows it
        held = store.query("SELECT state, downloaded_at FROM llm_batches")
        polls = len(batch_server.polls)
        time.sleep(0.2)
    assert held == [("in_progress", None)] and len(batch_server.polls) == polls  # nobody polls it any more


KILLED_RUN = """
import json, sys
from factory.llm import LLMConfig
from factory.passrate import ensure_rollouts
from factory.store import Store
from factory.tasks import load_tasks
spec = json.loads(sys.argv[1])
with Store.open(spec["run_dir"]) as store:
    ensure_rollouts(store, load_tasks(spec["tasks"]), LLMConfig(**spec["llm"]), n=2)
"""


@pytest.mark.parametrize("forgotten", [False, True], ids=["followed", "forgotten-by-the-provider"])
def test_a_run_killed_while_its_batch_runs_follows_that_batch_on_rerun(forgotten, batch_server, batch_config, tmp_path):
    script_answers(batch_server)
    batch_server.hold()
    config = batch_config()
    spec = {"tasks": str(task_file(tmp_path)), "run_dir": str(tmp_path / "run"), "llm": config.model_dump()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, json.dumps(spec)], start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(batch_server.polls) < 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(batch_server.polls) >= 2, "the child did not submit and poll its batch"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    [first] = batch_server.creates
    batch_server.release()
    if forgotten:  # past the provider's retention, say: its id answers 404, so the requests go in a new batch
        del batch_server.batches[first]
        script_answers(batch_server)
    with Store.open(tmp_path / "run") as store:
        assert store.query("SELECT batch_id, state, downloaded_at FROM llm_batches") == [(first, "in_progress", None)]
        outcome = ensure_rollouts(store, load_tasks(spec["tasks"]), config, n=2)
        calls = call_rows(store)
        states = store.query("SELECT state, downloaded_at IS NOT NULL FROM llm_batches ORDER BY created_at")
    assert outcome["rollouts"] == 6 and len(calls) == 6
    if forgotten:
        [second] = batch_server.creates[1:]
        assert states == [("gone", False), ("completed", True)]
        assert {(row[0], row[1], row[5]) for row in calls} == {("ok", 2, second)}  # the lost attempt still counts
    else:
        assert batch_server.creates == [first] and states == [("completed", True)]
        assert {(row[0], row[1], row[5]) for row in calls} == {("ok", 1, first)}


def refine_personas(config, store, personas, settings):
    import asyncio

    from factory.refine.pipeline import refine_one

    async def run():
        async with LLMClient(config, store) as llm:
            return await asyncio.gather(*(refine_one(llm, store, p, f"{p}, a gardener.", settings, None)
                                          for p in personas))  # fmt: skip

    return asyncio.run(run())


def test_refine_in_batch_mode_runs_in_rounds_with_the_same_verdicts(server, batch_server, batch_config, tmp_path):
    from test_refine_pipeline import PLAYED, SCRIPT_MARK, TRAJ_MARK, replies
    from test_refine_verify import step
    from test_refine_world import GARDEN

    from factory.refine.config import RefineConfig

    unflagged = step("water", {"litres": 2})  # at the kitchen: a location error the DM misses
    for target in (server, batch_server):
        target.route(SCRIPT_MARK, *[ok(GARDEN)] * 2)
        target.route(TRAJ_MARK, *[replies([PLAYED[0], PLAYED[1], unflagged])] * 2, *[replies(PLAYED[2:])] * 2)
    settings = RefineConfig(with_code=False, injection=False)
    verdicts = "SELECT trajectory_id, attempt, ok, rule, failed_step FROM verdicts ORDER BY 1, 2"
    with Store.open(tmp_path / "plain") as store:
        refine_personas(LLMConfig(model="gpt-4o-mini", base_url=server.base_url, timeout_s=5), store, ["p1", "p2"],
                        settings)  # fmt: skip
        plain = store.query(verdicts)
    with Store.open(tmp_path / "batch") as store:
        assert all(refine_personas(batch_config(), store, ["p1", "p2"], settings))
        batched, calls = store.query(verdicts), store.query("SELECT count(*), count(batch_id) FROM llm_calls")
    assert batched == plain and [row[2] for row in batched if row[1] == 0] == [False, False]
    assert {row[0] for row in batched if row[2]} == {"refine:p1", "refine:p2"}
    # both personas' scripts in one batch; then each round of play (the two personas' plays are the same request,
    # shared by the client) in a batch of its own, after the one before was verified
    assert [len(batch_server.batches[b]["bodies"]) for b in batch_server.creates] == [2, 1, 1, 1]
    assert calls == [(5, 5)]
