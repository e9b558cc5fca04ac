"""One value type end to end (factory/refine/values.py): the script check, the wire
schema, trajectory verification and validation code all see a parameter's value in
its declared type. Validation code runs in the real sandbox."""

import copy

import pytest
from test_refine_verify import GOOD, step
from test_refine_world import GARDEN

from factory.refine.schemas import trajectory_schema
from factory.refine.script import Script
from factory.refine.solvable import candidate_calls
from factory.refine.validation_code import SandboxCodeChecker, probe_calls
from factory.refine.values import NotOfType, typed_value
from factory.refine.verify import verify_steps
from factory.refine.world import WorldState
from factory.refine.world import step as world_step

TEXT_CODE = "def validate(params, state):\n    return params['place'] in ('kitchen', 'garden')"
NUMBER_CODE = (
    "def validate(params, state):\n    return state['location'] == 'garden' and "
    "'watering_can' in state['inventory'] and params['litres'] in (1, 2, 3)"
)
# What a script writer did before the rule: integers compared as text.
TEXT_FOR_NUMBERS = NUMBER_CODE.replace("(1, 2, 3)", "('1', '2', '3')")


def with_code(go=TEXT_CODE, water=NUMBER_CODE) -> Script:
    data = copy.deepcopy(GARDEN)
    data["actions"][0]["validation_code"] = go
    data["actions"][2]["validation_code"] = water
    return Script.model_validate(data)


@pytest.mark.parametrize(
    "value, kind, typed",
    [("15", "integer", 15), (15, "integer", 15), (15.0, "integer", 15), ("2.5", "number", 2.5), (2, "number", 2.0),
     ("True", "boolean", True), (False, "boolean", False), ("kitchen", "string", "kitchen")],
)  # fmt: skip
def test_values_convert_to_the_declared_type(value, kind, typed):
    converted = typed_value(value, kind)
    assert converted == typed and type(converted) is type(typed)


@pytest.mark.parametrize("value, kind", [("2.5", "integer"), ("fifteen", "integer"), (True, "integer"),
                                         (2, "string"), ("yes", "boolean"), (None, "number")])  # fmt: skip
def test_values_of_another_type_are_refused(value, kind):
    with pytest.raises(NotOfType):
        typed_value(value, kind)


def test_the_script_check_probes_with_typed_values():
    script = with_code()
    water = script.action("water")
    valid = [args[0] for args, accept, _ in probe_calls(water, "kitchen") if accept]
    assert valid == [{"litres": 1}, {"litres": 2}, {"litres": 3}]
    invalid = [args[0]["litres"] for args, accept, what in probe_calls(water, "kitchen") if "invalid" in what]
    assert invalid == [1003]  # well typed, not valid
    assert SandboxCodeChecker().script_problems(script) == []  # text code for text, number code for numbers


def test_code_that_compares_numbers_as_text_fails_the_script_check_not_the_trajectory():
    problems = SandboxCodeChecker().script_problems(with_code(water=TEXT_FOR_NUMBERS))
    assert problems == [f"action 'water': validation code rejects valid call {{'litres': {n}}}" for n in (1, 2, 3)]


def test_the_player_wire_offers_numbers_for_integers_and_text_for_strings():
    branches = trajectory_schema(with_code())["properties"]["steps"]["items"]["properties"]["2_action"]["anyOf"]
    enums = {name: spec["enum"] for b in branches for name, spec in b["properties"]["params"]["properties"].items()}
    assert enums["litres"] == [1, 2, 3, 4, 5]  # the valid numbers, then the series carried on
    assert "1" not in enums["litres"] and "garden" in enums["place"] and 1 in enums["litres"]


@pytest.mark.parametrize("litres", [2, "2"])  # JSON from the trajectory call, text from `factory eval`
def test_trajectory_verification_runs_the_same_code_with_the_same_types(litres):
    script = with_code()
    steps = copy.deepcopy(GOOD)
    steps[-1]["action"]["params"]["litres"] = litres
    verdict = verify_steps(script, steps, extra=SandboxCodeChecker.step_check(script))
    assert verdict.ok, verdict.reason


def test_every_valid_call_passes_and_a_refused_one_is_flagged():
    script = with_code()
    check = SandboxCodeChecker.step_check(script)
    ready = WorldState("garden", ["watering_can"], {"kitchen": []})
    for name, params in candidate_calls(script):
        if name != "take":  # the can is already held
            assert world_step(script, ready, name, params, check).check.ok, (name, params)
    strict = with_code(water="def validate(params, state):\n    return [params['litres'] < 2, 'That floods the pots.']")
    steps = copy.deepcopy(GOOD)
    verdict = verify_steps(strict, steps, extra=SandboxCodeChecker.step_check(strict))
    assert verdict.rule == "unflagged_error" and "That floods the pots." in verdict.reason
    steps[-1] = step("water", {"litres": 1}, done=True)
    assert verify_steps(strict, steps, extra=SandboxCodeChecker.step_check(strict)).ok
