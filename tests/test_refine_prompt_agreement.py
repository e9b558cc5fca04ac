"""The refine prompts say what the checks enforce (issue 26): each test renders the real request or
schema and holds it against the rule the verifier, the sandbox check or the world applies."""

import json
import re
import sys
from pathlib import Path
from typing import get_args

import pytest
from test_refine_world import GARDEN

from factory.llm.structured import feedback_messages, output_spec
from factory.refine.roles import ScriptWriter, TrajectorySimulator
from factory.refine.schemas import ERROR_TYPES, WIRE_KEYS
from factory.refine.script import GOAL_KINDS, DeclarativeScriptDraft, Script, ScriptDraft
from factory.refine.solvable import solvability_problems
from factory.refine.validation_code import SandboxCodeChecker, probe_calls, state_dict
from factory.refine.verify import Evaluation
from factory.refine.world import ErrorType, WorldState

sys.path.insert(0, str(Path(__file__).parent))
from refine_replay import is_repair  # noqa: E402

LOOK = {"name": "look", "description": "Look around the room."}  # no effect: the solvability check refuses it


@pytest.fixture
def garden():
    return Script.model_validate(GARDEN)


def failed_script() -> Script:
    return Script.model_validate({**GARDEN, "actions": [*GARDEN["actions"], LOOK]})


# -- 1. the script retry shows the script its feedback is about ------------------------------------------
@pytest.mark.parametrize("with_code", [True, False])
def test_the_retry_shows_the_failed_script_as_the_models_own_turn(with_code):
    script = failed_script()
    problems = solvability_problems(script, require_goal=True)
    assert problems and "'look'" in problems[0]
    writer = ScriptWriter(with_code=with_code)
    messages = writer.request("p1", "A gardener.", 1, problems, script).messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    shown = json.loads(messages[2]["content"])
    assert writer.response_model.model_validate(shown).model_dump() == ScriptDraft.model_validate(script.model_dump(
        include=set(ScriptDraft.model_fields))).model_dump()  # fmt: skip
    for name in re.findall(r"action '([^']+)'", "; ".join(problems)):  # every action the feedback names is shown
        assert name in {a["name"] for a in shown["actions"]}
    assert ("validation_code" in json.dumps(shown)) is False  # GARDEN has none; None is not written out
    assert problems[0] in messages[3]["content"]
    assert "persona_id" not in shown


def test_the_first_request_is_system_and_user():
    messages = ScriptWriter().request("p1", "A gardener.", 0).messages
    assert [m["role"] for m in messages] == ["system", "user"]


def test_the_replay_server_tells_a_script_retry_from_a_schema_repair():
    retry = ScriptWriter(with_code=False).request("p1", "A gardener.", 1, ["x"], failed_script()).messages
    first = ScriptWriter(with_code=False).request("p1", "A gardener.", 0).messages
    repair = first + feedback_messages('{"task": 1}', "task: Input should be a valid string")
    assert not is_repair({"messages": retry})
    assert not is_repair({"messages": first})
    assert is_repair({"messages": repair})


# -- 2. the validation-code rule says what the sandbox check probes --------------------------------------
def probe_kind(what: str) -> str:
    """Each kind of case probe_calls makes; an unknown kind fails, so a new probe needs its clause below."""
    if what.startswith("valid call"):
        return "accepts valid values where the preconditions hold"
    if what.startswith("invalid "):
        return "rejects a value outside valid_values"
    if what == "a state that breaks its preconditions":
        return "rejects where the preconditions do not hold"
    raise AssertionError(f"a probe the prompt does not describe: {what}")


CLAUSES = {
    "accepts valid values where the preconditions hold": "return True for every combination of the action's "
    "valid values when its preconditions hold",
    "rejects a value outside valid_values": "False when a parameter's value is not one of its valid_values",
    "rejects where the preconditions do not hold": "when its preconditions do not hold",
}


def test_the_code_rule_names_every_kind_of_probe(garden):
    system = ScriptWriter(with_code=True).request("p", "A gardener.", 0).messages[0]["content"]
    kinds = {probe_kind(what) for action in garden.actions for _, _, what in probe_calls(action, "kitchen")}
    assert kinds == set(CLAUSES)
    for kind in kinds:
        assert CLAUSES[kind] in system, kind
    assert "validation_code" not in ScriptWriter(with_code=False).request("p", "A gardener.", 0).messages[0]["content"]


def test_the_state_keys_the_prompt_names_are_the_state_the_code_gets(garden):
    system = ScriptWriter(with_code=True).request("p", "A gardener.", 0).messages[0]["content"]
    named = re.search(r"`state` is a dict with (.*?) \(", system).group(1)
    assert set(re.findall(r'"(\w+)"', named)) == set(state_dict(garden, WorldState.initial(garden)))


PRECONDITIONS_ONLY = """
def validate(params, state):
    return state["location"] == "garden" and "watering_can" in state["inventory"]
"""
AS_THE_PROMPT_SAYS = """
def validate(params, state):
    if params["litres"] not in (1, 2, 3):
        return [False, "That is not an amount you can pour."]
    return state["location"] == "garden" and "watering_can" in state["inventory"]
"""


def with_water_code(code: str) -> Script:
    actions = [dict(a, validation_code=code) if a["name"] == "water" else a for a in GARDEN["actions"]]
    return Script.model_validate({**GARDEN, "actions": actions})


def test_code_written_to_the_old_rule_fails_the_check_and_to_the_new_rule_passes():
    checker = SandboxCodeChecker()
    assert checker.script_problems(with_water_code(PRECONDITIONS_ONLY)) == [
        "action 'water': validation code accepts invalid litres=1003"
    ]
    assert checker.script_problems(with_water_code(AS_THE_PROMPT_SAYS)) == []


# -- 3. error types: the prompt offers only what the schema and the verifier can produce -----------------
def evaluation_line(system: str) -> str:
    return next(line for line in system.splitlines() if line.startswith(f"- {WIRE_KEYS['evaluation']}:"))


def test_error_types_agree_across_prompt_schema_verifier_and_world(garden):
    request = TrajectorySimulator().request(garden, [], 0, "t")
    system = request.messages[0]["content"]
    error_part = evaluation_line(system).split('"task_done"')[0]
    offered = re.findall(r'"(\w+)" \(|or "(\w+)"', error_part)
    assert {a or b for a, b in offered} == set(ERROR_TYPES)
    step = request.response_model["properties"]["steps"]["items"]
    evaluation = step["properties"][WIRE_KEYS["evaluation"]]["properties"]["error"]["enum"]
    assert evaluation == ERROR_TYPES
    # The world (and the world-judged DM) also names an unknown action, which the LLM DM's schema cannot decode.
    assert set(get_args(Evaluation.model_fields["error"].annotation)) == set(ERROR_TYPES) | {"unknown_action"}
    assert set(get_args(ErrorType)) == set(ERROR_TYPES) - {"none"} | {"unknown_action"}


def test_the_prompt_names_no_mistake_the_schema_cannot_decode(garden):
    request = TrajectorySimulator().request(garden, [], 0, "t")
    branches = request.response_model["properties"]["steps"]["items"]["properties"][WIRE_KEYS["action"]]["anyOf"]
    names_fixed = all("const" in b["properties"]["name"] for b in branches)
    assert names_fixed  # the schema ties every action to a name of the script ...
    assert "unknown action" not in request.messages[0]["content"].lower()  # ... so the prompt offers no such error


# -- 4. goal condition kinds: the schema offers what the prompt says goals use ----------------------------
@pytest.mark.parametrize("with_code", [True, False])
def test_goal_kinds_agree_between_prompt_and_schema(with_code):
    writer = ScriptWriter(with_code=with_code)
    request = writer.request("p", "A gardener.", 0)
    sentence = re.search(r"The goal lists the conditions \(([^)]*)\)", request.messages[0]["content"]).group(1)
    schema = json.loads(output_spec(request.response_model).schema_json)
    offered = schema["properties"]["goal"]["properties"]["conditions"]["items"]["properties"]["kind"]["enum"]
    assert set(re.findall(r'"(\w+)"', sentence)) == set(offered) == set(GOAL_KINDS)


def test_a_parameter_goal_kind_is_refused_by_the_schema():
    bad = {**GARDEN, "goal": {"conditions": [{"kind": "param_in_inventory", "value": "item"}]}}
    with pytest.raises(ValueError, match="goal.conditions.0.kind"):
        DeclarativeScriptDraft.model_validate(bad)


# -- 6. the simulated player starts from what the trained player is told -----------------------------------
def test_the_simulated_player_is_told_where_it_starts_and_what_it_sees(garden):
    from factory.refine.narration import opening_observation  # also the trained row's first observation (output.py)

    user = TrajectorySimulator().request(garden, [], 0, "t").messages[-1]["content"]
    opening = opening_observation(garden)
    assert f"What the player is told at the start (where it stands, what it carries, what it sees): {opening}" in user
    assert opening.startswith("You are in the kitchen.")  # where GARDEN's player starts, in the DM's words
