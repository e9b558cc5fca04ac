"""The prompts' own examples pass the checks they teach: every few-shot script (with its
validation code in the real sandbox, and without it as small models see it) and the
1-shot trajectory."""

import json

import pytest

from factory.paths import prompts_dir
from factory.refine.roles import ScriptWriter, TrajectorySimulator, _without_code
from factory.refine.script import DeclarativeScriptDraft, Script
from factory.refine.solvable import shortest_plan, solvability_problems
from factory.refine.validation_code import SandboxCodeChecker
from factory.refine.verify import verify_steps

FOLDER = prompts_dir() / "refine"
EXAMPLES = json.loads((FOLDER / "script_examples.json").read_text())


@pytest.mark.parametrize("index", range(len(EXAMPLES)))
def test_each_few_shot_script_verifies(index):
    script = Script.model_validate(EXAMPLES[index])
    assert SandboxCodeChecker().script_problems(script) == []
    assert solvability_problems(script, require_goal=True) == []
    plan = shortest_plan(script)
    last = script.action(plan[-1][0])
    assert any(e.kind == "set_fact" for e in last.effects)  # the task's own action completes it
    assert DeclarativeScriptDraft.model_validate(_without_code(EXAMPLES[index]))


def test_the_one_shot_trajectory_verifies_with_the_scripts_code():
    script = Script.model_validate(EXAMPLES[0])
    steps = json.loads((FOLDER / "trajectory_example.json").read_text())["steps"]
    verdict = verify_steps(script, steps, extra=SandboxCodeChecker.step_check(script))
    assert verdict.ok, verdict.reason
    assert verdict.corrections == 2


def test_the_dm_sees_the_rules_and_the_player_does_not():
    from factory.refine.output import build_trajectory

    script = Script.model_validate(EXAMPLES[0])
    request = TrajectorySimulator().request(script, [], 0, "t")
    user = request.messages[1]["content"]
    assert "water(litres): allowed when the player is in the garden and the player carries the watering can" in user
    assert "then 'tomatoes_watered' becomes true" in user and "Goal: the task is done at the step after which" in user
    steps = json.loads((FOLDER / "trajectory_example.json").read_text())["steps"]
    turns = build_trajectory("t", script, verify_steps(script, steps).checks, {}).turns
    first = turns[0].content
    assert "allowed when" not in first and "tomatoes_watered" not in first
    assert (
        "You are in the kitchen. A small kitchen with a sink. You see the watering can. You are carrying nothing."
        in first
    )
    assert "litres in [1, 2, 3]" in first  # typed values, as the player sends them


def test_the_script_prompt_shows_the_world_it_checks():
    system = ScriptWriter(with_code=True).request("p", "A plumber.", 0).messages[0]["content"]
    assert "set_fact" in system and "fact_true" in system and '"facts"' in system
    small = ScriptWriter(with_code=False).request("p", "A plumber.", 0).messages[0]["content"]
    assert "validation_code" not in small
