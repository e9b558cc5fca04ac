"""Scaffolded trajectories (small models): the world's plan fixes the moves, the model writes the thoughts.

The model is a loopback server that answers the real request as a model under its schema would: it
reads each step's fixed action from the schema and writes a thought for it.
"""

import asyncio
import json
import random

import jsonschema
import pytest
from loopback_server import ok
from test_refine_world import GARDEN

from factory.cli import build_parser
from factory.llm import LLMClient
from factory.refine.batch import trajectory_source
from factory.refine.config import RefineConfig
from factory.refine.inject import corrections_before
from factory.refine.pipeline import refine_one
from factory.refine.scaffold import planned_steps, tidy_thought, with_mistakes
from factory.refine.schemas import SCAFFOLD_KEYS, action_schema
from factory.refine.script import Script
from factory.refine.show import format_trajectory
from factory.refine.verify import verify_steps
from factory.run_config import FactoryConfig, config_from_args
from factory.store import Store

SCRIPT_MARK = "Write a script for an adventure"
SCAFFOLDED = RefineConfig(with_code=False, trajectories="scaffolded", seed=1, mistake_counts={2: 1})


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


def thinking_model(body):
    """A reply under the request's schema: every fixed action and observation echoed, a thought for each."""
    items = body["response_format"]["json_schema"]["schema"]["properties"]["steps"]["prefixItems"]
    steps = []
    for n, item in enumerate(items, start=1):
        fixed = item["properties"]
        steps.append({SCAFFOLD_KEYS["action"]: fixed[SCAFFOLD_KEYS["action"]]["const"],
                      SCAFFOLD_KEYS["thought"]: f"I think step {n} is {fixed[SCAFFOLD_KEYS['action']]['const']} now.",
                      SCAFFOLD_KEYS["observation"]: fixed[SCAFFOLD_KEYS["observation"]]["const"]})  # fmt: skip
    return json.dumps({"steps": steps})


def run_one(config, store, settings):
    async def run():
        async with LLMClient(config, store) as llm:
            return await refine_one(llm, store, "p1", "A gardener in Porto.", settings)

    return asyncio.run(run())


def test_the_plan_is_the_world_s_shortest_one_with_its_own_narration(script):
    steps = planned_steps(script)
    assert [s["action"] for s in steps] == [
        {"name": "take", "params": {"item": "watering_can"}},
        {"name": "go", "params": {"place": "garden"}},
        {"name": "water", "params": {"litres": 1}},
    ]  # typed: 1, not "1"
    assert [s["evaluation"]["task_done"] for s in steps] == [False, False, True]
    told = [s["observation"] for s in steps]
    assert "watering can" in told[0] and "A small kitchen" not in told[0]  # what changed, not the room again
    assert "the garden" in told[1] and "Rows of tomatoes." in told[1]  # the room, on arriving there
    assert "tomatoes are now watered" in told[2] and not any("worked" in t or "_" in t for t in told)
    assert verify_steps(script, [{**s, "thought": "I act."} for s in steps], min_corrections=0).ok


@pytest.mark.parametrize("seed", range(6))
def test_mistakes_go_inside_the_plan_each_followed_by_its_correction(script, seed):
    plan = planned_steps(script)
    steps = with_mistakes(script, plan, 2, SCAFFOLDED, random.Random(seed))
    assert [s["action"] for s in steps if not s.get("injected")] == [s["action"] for s in plan]  # the plan, in order
    assert corrections_before(steps, len(steps)) >= 2 and not any("open_thought" in s for s in steps)
    verdict = verify_steps(script, [{**s, "thought": "I act."} for s in steps], min_corrections=2)
    assert verdict.ok and verdict.corrections >= 2


def test_one_call_yields_a_verified_labelled_trajectory(server, fast_config, tmp_path):
    server.content = thinking_model
    server.route(SCRIPT_MARK, ok(GARDEN))
    store = Store(tmp_path / "r.sqlite")
    assert run_one(fast_config(), store, SCAFFOLDED)
    assert len(server.requests) == 2  # the script, then the whole plan's thoughts in one call
    schema = server.requests[1]["body"]["response_format"]["json_schema"]["schema"]
    assert all(
        "const" in i["properties"][SCAFFOLD_KEYS["action"]] for i in schema["properties"]["steps"]["prefixItems"]
    )
    row = store.query(
        "SELECT trajectory_id, persona_id, verified, reason, conversations, stats, llm_calls, steps FROM trajectories"
    )[0]
    steps = json.loads(row[7])
    assert all(s["thought"].startswith("I think step") for s in steps)  # every thought is the model's
    assert steps[-1]["evaluation"]["task_done"] and sum(bool(s.get("injected")) for s in steps) == 2
    provenance = json.loads(row[5])["provenance"]
    assert provenance == {"llm_calls": 2, "dm_evaluation": "world", "script_source": "llm",
                          "trajectory_source": "scaffolded"}  # fmt: skip
    shown = format_trajectory(
        dict(zip(("trajectory_id", "persona_id", "verified", "reason", "conversations", "stats", "llm_calls"), row[:7]))
    )
    assert "trajectory_source scaffolded" in shown and "error, loss=false]" in shown


def test_a_reply_that_fails_its_schema_is_retried_within_the_budget(server, fast_config, tmp_path):
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route("moves are fixed", ok({"steps": []}), ok({"steps": []}), ok({"steps": []}))
    store = Store(tmp_path / "r.sqlite")
    settings = SCAFFOLDED.model_copy(update={"budget": 3})
    assert not run_one(fast_config(max_retries=0), store, settings)
    (reason, calls) = store.query("SELECT reason, llm_calls FROM trajectories")[0]
    assert calls == 3 and reason.startswith("llm ")  # the script and two tries
    assert [r[0] for r in store.query("SELECT attempt FROM verdicts ORDER BY 1")] == [0, 1]


def test_thoughts_are_cut_to_whole_sentences_said_once():
    assert tidy_thought("I see it. I take it. I see it. You will take it to the") == "I see it. I take it."
    assert tidy_thought("I will fix the engine,") == "I will fix the engine."


def test_thoughts_that_mostly_repeat_one_another_are_refused(script):
    from factory.refine.scaffold import with_thoughts

    steps = planned_steps(script)
    assert with_thoughts(steps, ["I am fixing it."] * 3) is None and with_thoughts(steps, ["I go.", "", "I x."]) is None
    assert with_thoughts(steps, ["I take it.", "I go.", "I go."]) is not None


def test_each_action_carries_exactly_its_own_parameters(script):
    schema = action_schema(script)
    jsonschema.validate({"name": "water", "params": {"litres": 2}}, schema)
    jsonschema.validate({"name": "water", "params": {"litres": 5}}, schema)  # a wrong value stays possible
    for bad in (
        {"name": "go", "params": {}},
        {"name": "go", "params": {"place": "garden", "item": "watering_can"}},
        {"name": "water", "params": {"place": "garden"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


@pytest.mark.parametrize(("model", "trajectories", "expected"), [
    ("local", "auto", "scaffolded"), ("gpt-4o", "auto", "llm"), ("local:/m.gguf", "auto", "llm"),
    ("local", "llm", "llm"), ("gpt-4o", "scaffolded", "scaffolded"),
])  # fmt: skip
def test_auto_scaffolds_only_the_embedded_model(model, trajectories, expected):
    config = FactoryConfig.model_validate({"llm": {"model": model}, "refine": {"trajectories": trajectories}})
    assert trajectory_source(config) == expected


def test_the_cli_flag_sets_the_trajectory_source():
    args = build_parser().parse_args(["refine", "--trajectories", "scaffolded", "/tmp/unused"])
    assert config_from_args(args).refine.trajectories == "scaffolded"
    assert config_from_args(build_parser().parse_args(["refine"])).refine.trajectories == "auto"
