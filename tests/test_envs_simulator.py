"""The simulated environment over real HTTP: a model plays the garden world one move at a time.

Replies are what a capable model answers to these prompts (the world's rules, the history, the move);
the weak replies are what the embedded SmolLM2 really answered in the benchmark (every move accepted and
the task done). The agreement measure is checked on GOOD's five moves against `world.step`.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from loopback_server import Action, ok
from test_refine_verify import GOOD
from test_refine_world import GARDEN
from test_wire_schemas_bounded import unbounded_strings

from factory.envs.simulator import SIMULATOR_FAILED, WorldSimulator, simulator_messages, simulator_schema
from factory.envs.simulator_agreement import Case, measure_agreement
from factory.envs.simulator_truth import history_before, judge_steps
from factory.llm import LLMClient
from factory.refine.grounding import ground_steps
from factory.refine.script import Script


def reply(check: str, told: str, error: str = "none", done: bool = False) -> dict:
    return {"3_dm_thinking": check, "4_observation": told, "5_evaluation": {"error": error, "task_done": done}}


STRONG = [  # a capable DM's answers to GOOD's five moves, in order
    reply("The player is in the kitchen carrying nothing. go takes place in kitchen or garden; attic is not a valid "
          "place, so the move is refused (parameter).", "There is no attic you can walk to from here.", "parameter"),
    reply("The player is in the kitchen, where the watering can lies. take(item=watering_can) is allowed.",
          "You pick up the watering can."),
    reply("The player is in the kitchen carrying the watering can. water needs the player in the garden: refused "
          "(location).", "You can only water the tomatoes in the garden, and you are in the kitchen.", "location"),
    reply("go(place=garden) is always allowed; the player moves to the garden.", "You walk out into the garden."),
    reply("The player is in the garden carrying the watering can, so water is allowed; tomatoes_watered becomes "
          "true, which is the goal.", "You water the tomatoes with 2 litres. The task is done.", done=True),
]  # fmt: skip
WEAK = reply("You are in the kitchen. You see the watering can.", "You are in the kitchen.", done=True)


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


@pytest.fixture
def moves(script):
    """GOOD's moves with the lines the real world tells the player."""
    return ground_steps(script, [], GOOD, None)


def route_strong(server, script, moves) -> None:
    """Each strong reply answers exactly the prompt the simulator sends for its move (its whole user message)."""
    judged = judge_steps(script, moves)
    for index, answer in enumerate(STRONG):
        user = simulator_messages(script, history_before(judged, index), judged[index].action)[1]["content"]
        server.route(user, ok(answer))


def run(config, coroutine_of):
    async def go():
        async with LLMClient(config) as llm:
            return await coroutine_of(WorldSimulator(llm))

    return asyncio.run(go())


def test_a_move_is_judged_from_exactly_the_simulators_prompt(server, fast_config, script, moves):
    route_strong(server, script, moves)
    history = history_before(judge_steps(script, moves), 2)
    step = run(fast_config(), lambda sim: sim.step(script, history, {"name": "water", "params": {"litres": 2}}))
    assert (step.accepted, step.error_type, step.goal_reached, step.failed) == (False, "location", False, False)
    assert step.observation == STRONG[2]["4_observation"]
    body = server.requests[0]["body"]
    assert body["messages"] == simulator_messages(script, history, {"name": "water", "params": {"litres": 2}})
    assert body["response_format"]["json_schema"]["schema"] == simulator_schema()
    assert "2. take(item=watering_can): accepted. The player was told: " in body["messages"][1]["content"]


def test_the_goal_move_reaches_the_goal(server, fast_config, script, moves):
    route_strong(server, script, moves)
    history = history_before(judge_steps(script, moves), 4)
    step = run(fast_config(), lambda sim: sim.step(script, history, {"name": "water", "params": {"litres": 2}}))
    assert (step.accepted, step.error_type, step.goal_reached) == (True, None, True)


def test_every_string_the_simulator_asks_for_is_bounded():
    assert unbounded_strings(simulator_schema()) == []  # a small model under the grammar cannot ramble to max_tokens


@pytest.mark.parametrize(
    "answer",
    [
        ok("The player walks to the garden."),  # prose, not JSON
        ok({"3_dm_thinking": "ok", "4_observation": "ok", "5_evaluation": {"error": "maybe", "task_done": False}}),
        Action(status=500, body='{"error": {"message": "overloaded"}}'),
    ],
    ids=["prose", "off_schema", "server_error"],
)
def test_a_garbage_reply_is_a_failed_step_not_a_crash(server, fast_config, script, answer):
    server.default = answer
    step = run(
        fast_config(max_retries=1), lambda sim: sim.step(script, [], {"name": "go", "params": {"place": "garden"}})
    )
    assert step.failed and step.error_type == SIMULATOR_FAILED and not step.accepted and not step.goal_reached
    assert step.observation.startswith("the simulator gave no verdict: llm ")


def test_a_refused_move_never_reaches_the_goal(server, fast_config, script):
    server.default = ok(reply("The player is not in the garden.", "Not here.", "location", done=True))  # contradictory
    step = run(fast_config(), lambda sim: sim.step(script, [], {"name": "water", "params": {"litres": 2}}))
    assert (step.accepted, step.error_type, step.goal_reached, step.failed) == (False, "location", False, False)


def test_agreement_of_a_capable_simulator_on_a_recorded_trajectory(server, fast_config, script, moves):
    route_strong(server, script, moves)
    agreement = run(fast_config(), lambda sim: measure_agreement(sim, [Case("garden", script, moves)]))
    figures = agreement.figures()
    assert (figures["steps"], figures["accepted_agree"], figures["goal_agree"], figures["error_type_agree"]) == (
        5,
        5,
        5,
        5,
    )
    assert {error: row["steps"] for error, row in figures["by_world_error"].items()} == \
        {"none": 3, "parameter": 1, "location": 1}  # fmt: skip
    assert figures["goal"] == {"world_goal_steps": 1, "simulator_goal_on_them": 1, "simulator_goal_elsewhere": 0}
    assert figures["disagreements"] == []


def test_agreement_counts_what_a_weak_simulator_gets_wrong(server, fast_config, script, moves):
    server.default = ok(WEAK)  # every move accepted and the task done, as SmolLM2 answered
    agreement = run(fast_config(), lambda sim: measure_agreement(sim, [Case("garden", script, moves)]))
    figures = agreement.figures()
    assert (figures["accepted_agree"], figures["goal_agree"], figures["error_type_agree"]) == (3, 1, 3)
    assert figures["accepted_confusion"] == {"world accepted": {"simulator accepted": 3},
                                             "world refused": {"simulator accepted": 2}}  # fmt: skip
    assert figures["goal"]["simulator_goal_elsewhere"] == 4
    assert figures["by_world_error"]["location"]["simulator_said"] == {"none": 1}
    assert [d["step"] for d in figures["disagreements"]] == [0, 1, 2, 3]
    assert json.dumps(figures)  # the figures are what the results file stores


def test_a_move_refused_by_validation_code_is_not_measured(script, moves):
    coded = [dict(m) for m in moves]
    coded[1] = {**coded[1], "evaluation": {"error": "logic", "task_done": False}}  # the rules allow it: code refused
    judged = judge_steps(script, coded)
    assert judged[1].code_refused and not judged[1].accepted
    assert judged[3].before.inventory == []  # the refused take changed nothing after it


@pytest.mark.local_model
def test_the_embedded_model_plays_one_move_under_the_schema(script):
    """One call on SmolLM2: its reply decodes under the simulator's schema into a verdict (right or not: the
    benchmark measures that; SmolLM2 accepts nearly every move)."""
    from factory.llm import LLMConfig

    config = LLMConfig(model="local", temperature=0.0, max_tokens_cap=320)
    step = run(config, lambda sim: sim.step(script, [], {"name": "take", "params": {"item": "watering_can"}}))
    assert not step.failed, step.observation
    assert step.observation and step.error_type in (None, "parameter", "location", "logic", "unknown_action")
