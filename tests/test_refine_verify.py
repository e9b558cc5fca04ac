"""Algorithm 1, rule by rule: one trajectory that passes each rule and one that breaks it."""

import copy

import pytest
from test_refine_world import GARDEN

from factory.refine.script import Script
from factory.refine.verify import verify_steps


def step(name, params, error="none", done=False):
    return {
        "thought": f"I will {name}.",
        "action": {"name": name, "params": params},
        "dm_thinking": "Check the rules.",
        "observation": "Something happens.",
        "evaluation": {"error": error, "task_done": done},
    }


# Two mistakes, each corrected at the next move, then the task is done.
GOOD = [
    step("go", {"place": "attic"}, error="parameter"),
    step("take", {"item": "watering_can"}),
    step("water", {"litres": 2}, error="location"),
    step("go", {"place": "garden"}),
    step("water", {"litres": 2}, done=True),
]


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


def broken(index, **changes):
    steps = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if key in ("error", "task_done"):
            steps[index]["evaluation"][key] = value
        else:
            steps[index][key] = value
    return steps


def test_the_good_trajectory_passes_every_rule(script):
    verdict = verify_steps(script, GOOD)
    assert verdict.ok, verdict.reason
    assert verdict.corrections == 2 and len(verdict.checks) == 5
    assert [c.action.ok for c in verdict.checks] == [False, True, False, True, True]


@pytest.mark.parametrize(
    "steps, rule, at",
    [
        (broken(1, observation=None), "format", 1),
        (broken(0, error="none"), "unflagged_error", 0),
        (broken(1, error="logic"), "false_alarm", 1),
        (broken(2, error="parameter"), "wrong_error", 2),
        (broken(3, task_done=True), "early_done", 3),
        (GOOD[:3] + [step("go", {"place": "kitchen"}, done=True)], "false_done", 3),
        (broken(4, task_done=False), "missed_done", 4),
        (GOOD[:4], "not_done", 4),
    ],
)
def test_each_rule_catches_its_failure(script, steps, rule, at):
    verdict = verify_steps(script, steps)
    assert not verdict.ok and verdict.rule == rule and verdict.failed_step == at, verdict.reason
    assert len(verdict.checks) == at  # the verified prefix the generator continues from
    assert not verdict.restart or at == 0


def test_too_few_corrections_means_start_over(script):
    clean = [
        step("take", {"item": "watering_can"}),
        step("go", {"place": "garden"}),
        step("water", {"litres": 1}, done=True),
    ]
    verdict = verify_steps(script, clean)
    assert verdict.rule == "too_few_corrections" and verdict.restart
    assert verify_steps(script, GOOD, min_corrections=3).rule == "too_few_corrections"
    assert verify_steps(script, clean, min_corrections=0).ok


def test_an_extra_check_such_as_validation_code_can_reject_an_action(script):
    def no_more_than_one_litre(name, params, state):
        if name == "water" and int(params["litres"]) > 1:
            return False, "the pot overflows"
        return None

    verdict = verify_steps(script, GOOD, extra=no_more_than_one_litre)
    assert verdict.rule == "unflagged_error" and verdict.failed_step == 4
    assert "overflows" in verdict.reason


def test_the_one_shot_example_passes_against_the_first_example_script():
    import json

    from factory.paths import prompts_dir

    folder = prompts_dir() / "refine"
    script = Script.model_validate(json.loads((folder / "script_examples.json").read_text())[0])
    steps = json.loads((folder / "trajectory_example.json").read_text())["steps"]
    verdict = verify_steps(script, steps)
    assert verdict.ok, verdict.reason
    assert verdict.checks[-1].state_after.facts == {"tomatoes_watered"}  # its last action is the task's


def test_a_first_step_failure_restarts(script):
    verdict = verify_steps(script, broken(0, error="none"))
    assert verdict.restart


def test_injected_steps_are_mistakes_the_verifier_accepts(script):
    import random

    from factory.refine.inject import mistake_step
    from factory.refine.slips import finishing_actions, slips_here
    from factory.refine.world import WorldState

    start = WorldState.initial(script)
    found = slips_here(script, [start], set(), finishing_actions(script))
    kinds = set(found)
    for seed in range(30):
        kind = random.Random(seed).choice(sorted(found))
        step_ = mistake_step(script, start, *random.Random(seed).choice(found[kind]), kind, "opening")
        verdict = verify_steps(script, [step_] + GOOD[1:])
        assert verdict.checks[0].action.ok is False  # a real mistake...
        assert verdict.failed_step != 0, verdict.reason  # ...that the DM evaluated correctly
    assert kinds == {"wrong_place"}  # what the kitchen allows: watering here (an amount would fail anyway)


@pytest.mark.parametrize("flagged", ["logic", "unknown_action"])
def test_an_unknown_action_is_its_own_error_type_in_the_row(script, flagged):
    """Not a logic error (issue 28): the row labels it `unknown_action`, as `factory eval` counts it; the LLM
    DM, whose schema has no such type, may call it logic."""
    from factory.refine.output import build_trajectory

    steps = [step("fly", {}, error=flagged), *GOOD[1:2], step("water", {"litres": 2}, error="location"), *GOOD[3:]]
    verdict = verify_steps(script, steps)
    assert verdict.ok, verdict.reason
    assert verdict.checks[0].action.error_type == "unknown_action"
    stats = build_trajectory("refine:t", script, verdict.checks, {}).stats()
    assert stats.errors_by_type == {"unknown_action": 1, "location": 1}
