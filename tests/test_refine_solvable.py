"""Solvability: the breadth-first search over a script's world."""

import copy

from test_refine_world import GARDEN

from factory.refine.script import Script
from factory.refine.solvable import describe_plan, shortest_plan, solvability_problems
from factory.refine.world import WorldState


def test_the_shortest_plan_for_the_garden():
    script = Script.model_validate(GARDEN)
    plan = shortest_plan(script)
    assert describe_plan(plan) == "take(item=watering_can), then go(place=garden), then water(litres=1)"
    assert solvability_problems(script, require_goal=True) == []


def test_a_plan_from_a_later_state_and_a_goal_that_already_holds():
    script = Script.model_validate(GARDEN)
    assert shortest_plan(script, WorldState("garden", ["watering_can"], {}, {"tomatoes_watered"})) == []
    assert describe_plan(shortest_plan(script, WorldState("garden", ["watering_can"], {}))) == "water(litres=1)"
    done = copy.deepcopy(GARDEN)
    done["environment"]["facts"] = [{"name": "tomatoes_watered", "initially": True}]
    assert "already holds" in solvability_problems(Script.model_validate(done), True)[0]


def test_an_unreachable_goal_is_a_problem():
    data = copy.deepcopy(GARDEN)
    data["actions"] = [a for a in data["actions"] if a["name"] != "take"]  # the can can never be picked up
    problems = solvability_problems(Script.model_validate(data), require_goal=True)
    assert problems and "reaches the goal" in problems[0]


def test_a_missing_goal_matters_only_without_code():
    data = {**GARDEN, "goal": {"conditions": []}}
    script = Script.model_validate(data)
    assert shortest_plan(script) is None
    assert solvability_problems(script, require_goal=False) == []
    assert "declare the goal" in solvability_problems(script, require_goal=True)[0]


def test_an_action_that_changes_nothing_is_a_problem():
    data = copy.deepcopy(GARDEN)
    data["actions"].append({"name": "admire", "description": "Admire the view."})
    problems = solvability_problems(Script.model_validate(data), require_goal=True)
    assert problems == ["action 'admire' changes nothing; give it an effect (e.g. set_fact) so the world records it"]


def test_the_search_is_bounded(monkeypatch):
    from factory.refine import solvable

    script = Script.model_validate(GARDEN)  # its shortest plan has 3 actions
    monkeypatch.setattr(solvable, "MAX_DEPTH", 2)
    assert shortest_plan(script) is None and "at most 2" in solvability_problems(script, True)[0]
    monkeypatch.setattr(solvable, "MAX_DEPTH", 3)
    assert len(shortest_plan(script)) == 3


def test_a_valid_value_not_of_its_type_is_a_problem():
    data = copy.deepcopy(GARDEN)
    data["actions"][2]["parameters"][0]["valid_values"] = ["1", "two"]
    problems = solvability_problems(Script.model_validate(data), require_goal=True)
    assert problems == ["action 'water': valid value 'two' of 'litres' is not of type integer"]
