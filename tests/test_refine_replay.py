"""Issue 13's done-when figures on the recorded capable-model set, replayed over loopback HTTP.

The set (benchmarks/data/refine_replay/capable_v1) holds replies written blind to
the real script and trajectory prompts, as a strong model would answer them (first
trajectories, and continuations that fill the injected mistakes' missing thoughts);
the pipeline runs unchanged against them (LLM as DM, no validation code, injection on).
"""

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from refine_replay import ReplayServer, load_replay_set, request_stage, write_personas

from factory.refine.batch import run_refine
from factory.refine.quality import refine_quality
from factory.refine.quality_rows import row_quality
from factory.run_config import FactoryConfig
from factory.store import Store

REPLAY_SET = Path(__file__).parent.parent / "benchmarks" / "data" / "refine_replay" / "capable_v1"
# Measured 22/22 verified in 54 calls, 2.45 a verified trajectory (benchmarks/results/refine_yield.json,
# key "replay:capable_v1 ..."); floors with margin for two lost rows.
MIN_YIELD = 0.9
MAX_CALLS_PER_VERIFIED = 3.0  # the paper's budget is 4 per saved trajectory, script included


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    recordings = load_replay_set(REPLAY_SET)
    server = ReplayServer(recordings)
    base_url = server.start_in_thread()
    folder = tmp_path_factory.mktemp("replay")
    personas = write_personas(recordings, folder / "personas.jsonl")
    config = FactoryConfig.model_validate(
        {
            "run_dir": str(folder / "run"),
            "llm": {"model": "replay", "base_url": base_url, "cache": False, "max_retries": 0},
            "refine": {"personas": str(personas), "count": len(recordings), "with_code": False, "dm_evaluation": "llm"},
        }
    )
    try:
        outcome = run_refine(config, progress=False)
    finally:
        server.stop()
    with Store.open(folder / "run", read_only=True) as store:
        yield recordings, outcome, refine_quality(store), server, row_quality(store)


def test_the_set_holds_at_least_20_personas_with_script_and_trajectory_replies(replayed):
    recordings = replayed[0]
    assert len(recordings) >= 20
    for recording in recordings:
        stages = {r["stage"] for r in recording["replies"]}
        assert stages >= {"script", "trajectory"}, recording["persona_id"]


def test_verified_trajectories_end_with_the_action_that_completes_the_task(replayed):
    quality = replayed[2]
    assert quality["verified"] >= 1
    assert quality["completion"]["share_completed"] >= 0.95


def test_the_first_mistake_is_not_always_at_step_1(replayed):
    first = replayed[2]["first_mistake"]
    assert first and set(first) != {"1"}


def test_no_mistaken_thought_repeats_a_template(replayed):
    thoughts = replayed[2]["thoughts"]
    assert thoughts["mistaken_turns"] >= 1
    assert thoughts["repeated"] == 0
    assert thoughts["top_prefix_share"] <= 0.2  # no opening shared by a fifth of the mistaken turns


def test_mistakes_per_row_vary(replayed):
    per_row = replayed[2]["mistakes_per_row"]
    assert len(per_row) >= 2, per_row  # not every row holds the same number of corrected mistakes


def test_injected_mistakes_are_varied_slips_the_dm_answers_in_its_own_words(replayed):
    """Issue 26's done-when on the recorded set: the DM's line on every injected step is the model's (no world
    template), no observation names a fact id, no injected move repeats in its row, and the mistakes are of
    at least 4 kinds holding more than 10% each."""
    rows = replayed[4]
    lines = rows["dm_lines"]
    assert lines["injected_steps"] >= 10 and lines["template_lines_on_injected"] == 0, lines["template_examples"]
    assert lines["with_fact_ids"] == 0, lines["fact_id_examples"]
    assert rows["repeats"]["injected"]["turns"] >= 10 and rows["repeats"]["injected"]["repeated"] == 0
    assert rows["slip_kinds"]["kinds_above_floor"] >= 4, rows["slip_kinds"]["kinds"]
    assert "unlabelled" not in rows["slip_kinds"]["kinds"]


def test_yield_and_calls_are_within_the_measured_floors(replayed):
    funnel = replayed[1].funnel
    assert funnel["personas"] == len(replayed[0])
    assert funnel["verified"] / funnel["personas"] >= MIN_YIELD
    assert replayed[2]["verified"] == funnel["verified"]


def test_the_set_answers_every_request_of_its_own_run(replayed):
    assert replayed[3].missing == []  # continuations (attempt 1) are recorded too


def test_calls_per_verified_trajectory_stay_under_the_floor(replayed):
    recordings, outcome, _, server, _ = replayed
    calls = sum(server.asked.values())
    assert calls / outcome.funnel["verified"] <= MAX_CALLS_PER_VERIFIED


def test_a_request_the_set_cannot_answer_is_an_http_400_and_a_pending_file(tmp_path):
    server = ReplayServer(load_replay_set(REPLAY_SET), pending_dir=tmp_path / "pending")
    base_url = server.start_in_thread()
    body = {
        "model": "replay",
        "messages": [{"role": "user", "content": "Task: a task nobody recorded."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Trajectory", "schema": {}}},
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
    finally:
        server.stop()
    assert refused.value.code == 400
    assert server.missing == ["replay: no recorded reply for stage=trajectory for an unknown persona"]
    assert json.loads(next((tmp_path / "pending").glob("*.json")).read_text()) == body


def test_stage_comes_from_the_response_schema_name():
    def body(name):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": {}}}}

    assert request_stage(body("DeclarativeScriptDraft")) == "script"
    assert request_stage(body("Trajectory")) == "trajectory"
    assert request_stage({"messages": []}) is None
