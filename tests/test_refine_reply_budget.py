"""Reply budgets (issue 26): a refine request asks for room for the reply it asks for (a script, with
code or without; N trajectory steps), up to llm.max_tokens_cap, and a provider whose limit is lower
answers with one line that says which setting to lower. Each test renders the real request."""

import asyncio
import json
from pathlib import Path

import pytest
from loopback_server import provider_error
from test_refine_world import GARDEN

from factory.llm import LLMClient, LLMConfig
from factory.llm.request import call_params
from factory.refine.roles import CHARS_PER_TOKEN, ScriptWriter, ThoughtWriter, TrajectorySimulator
from factory.refine.script import Script

REPLAY_SET = Path(__file__).parent.parent / "benchmarks" / "data" / "refine_replay" / "capable_v1"


@pytest.fixture
def garden():
    return Script.model_validate(GARDEN)


def recorded(stage: str) -> list[str]:
    replies = [r for f in sorted(REPLAY_SET.glob("*.json")) for r in json.loads(f.read_text())["replies"]]
    return [json.dumps(r["reply"], separators=(",", ":")) for r in replies if r["stage"] == stage]


def sent_max_tokens(request, **config) -> int:
    return call_params(LLMConfig(**config), request)["max_tokens"]


def test_the_default_1024_would_cut_the_recorded_replies_and_the_budget_does_not(garden):
    scripts, trajectories = recorded("script"), recorded("trajectory")
    longest = max(len(t) for t in trajectories) // CHARS_PER_TOKEN
    assert longest > LLMConfig().max_tokens  # the defect: a capable model's reply runs past 1024 tokens
    script_budget = sent_max_tokens(ScriptWriter(with_code=False).request("p", "A gardener.", 0))
    trajectory_budget = sent_max_tokens(TrajectorySimulator().request(garden, [], 0, "t"))
    assert max(len(s) for s in scripts) // CHARS_PER_TOKEN <= script_budget
    assert longest <= trajectory_budget


def test_the_budget_grows_with_what_is_asked(garden):
    with_code = ScriptWriter(with_code=True).request("p", "A gardener.", 0).reply_tokens
    without = ScriptWriter(with_code=False).request("p", "A gardener.", 0).reply_tokens
    assert with_code > without
    short = TrajectorySimulator(max_steps=4).request(garden, [], 0, "t").reply_tokens
    long = TrajectorySimulator(max_steps=12).request(garden, [], 0, "t").reply_tokens
    assert long > 2.9 * short  # three times the steps, three times the room
    steps = [{"action": {"name": "go", "params": {"place": "garden"}}, "observation": "You are in the garden."}]
    assert ThoughtWriter().request(garden, steps * 6, 0, "t").reply_tokens > ThoughtWriter().request(
        garden, steps * 2, 0, "t"
    ).reply_tokens  # fmt: skip


def test_the_largest_trajectory_reply_the_schema_allows_fits_its_budget(garden):
    request = TrajectorySimulator(max_steps=10).request(garden, [], 0, "t")
    step = {
        "1_thought": "x" * 300,
        "2_action": {"name": "water", "params": {"litres": 3}},
        "3_dm_thinking": "x" * 300,
        "4_observation": "x" * 300,
        "5_evaluation": {"error": "location", "task_done": False},
    }
    assert len(json.dumps({"steps": [step] * 10})) // CHARS_PER_TOKEN <= request.reply_tokens


def test_the_cap_bounds_the_budget_and_the_configs_floor_and_own_params_win():
    request = ScriptWriter(with_code=True).request("p", "A gardener.", 0)
    assert sent_max_tokens(request) == request.reply_tokens > 1024
    assert sent_max_tokens(request, max_tokens_cap=1500) == 1500
    assert sent_max_tokens(request, max_tokens=6000) == 6000
    request.params["max_tokens"] = 700
    assert sent_max_tokens(request) == 700


OPENAI_MAX_TOKENS = dict(
    message="max_tokens is too large: 2518. This model supports at most 2048 completion tokens, whereas you provided"
    " 2518.",
    type="invalid_request_error",
)


def test_a_provider_limit_below_the_budget_is_one_line_naming_the_setting(server, fast_config):
    server.route("A lighthouse keeper", provider_error(**OPENAI_MAX_TOKENS, status=400))
    request = ScriptWriter(with_code=True).request("p", "A lighthouse keeper.", 0)

    async def go():
        async with LLMClient(fast_config(), None) as llm:
            return await llm.run(request)

    result = asyncio.run(go())
    assert server.requests[-1]["body"]["max_tokens"] == request.reply_tokens
    assert result.error_kind == "context_length" and result.attempts == 1  # not retried: the same ask fails again
    assert "lower llm.max_tokens_cap" in result.error and "\n" not in result.error
