"""Per-script trajectory schemas: each action's own values and the ones a player could take for them,
bounded everywhere (issue 26: no destination for an amount, no choice where the action list shows none)."""

import jsonschema
import pytest
from test_refine_world import GARDEN

from factory.llm.structured import output_spec
from factory.refine.schemas import param_values, to_wire, trajectory_schema
from factory.refine.script import Script


@pytest.fixture
def schema():
    return trajectory_schema(Script.model_validate(GARDEN), min_steps=1, max_steps=4)


def step(name="go", params=None, error="none", done=False):
    return to_wire({
        "thought": "I should move.", "action": {"name": name, "params": params or {"place": "garden"}},
        "dm_thinking": "The player walks.", "observation": "You are in the garden.",
        "evaluation": {"error": error, "task_done": done},
    })  # fmt: skip


def test_each_parameter_offers_its_own_values_and_near_misses():
    garden = Script.model_validate(GARDEN)
    values = {p.name: param_values(garden, p) for a in garden.actions for p in a.parameters}
    assert values == {"place": ["kitchen", "garden"], "item": ["watering_can"], "litres": [1, 2, 3, 4, 5]}


def test_an_item_parameter_offers_items_like_its_own():
    keys = {**GARDEN, "environment": {**GARDEN["environment"], "locations": [
        {"name": "kitchen", "description": "A small kitchen.", "items": ["watering_can", "red_key", "blue_key"]},
        {"name": "garden", "description": "Rows of tomatoes.", "items": ["shed_key", "rake"]}]}}  # fmt: skip
    action = {"name": "unlock", "description": "Unlock the shed.", "parameters": [
        {"name": "key", "valid_values": ["red_key", "shed_key"]}]}  # fmt: skip
    script = Script.model_validate({**keys, "actions": keys["actions"] + [action]})
    # another key (a word shared) or what lies beside a right one; no place
    assert param_values(script, script.action("unlock").parameters[0]) == ["red_key", "shed_key", "blue_key", "rake",
                                                                           "watering_can"]  # fmt: skip


def test_a_wrong_value_of_the_right_kind_is_allowed(schema):
    jsonschema.validate({"steps": [step("water", {"litres": 5}, error="parameter")]}, schema)


@pytest.mark.parametrize(
    "bad",
    [
        {"steps": []},
        {"steps": [step(name="fly")]},
        {"steps": [step(params={"place": "attic"})]},
        {"steps": [step(params={"place": "watering_can"})]},  # an item for a place
        {"steps": [step("water", {"litres": "garden"})]},  # a place for an amount
        {"steps": [step("water", {"litres": 9})]},  # not a near miss
        {"steps": [step(params={"colour": "red"})]},
        {"steps": [step(error="typo")]},
        {"steps": [dict(step(), **{"1_thought": "x" * 301})]},
        {"steps": [step()] * 5},
    ],
)
def test_what_the_schema_forbids(schema, bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_every_string_and_array_is_bounded(schema):
    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "string":
                assert "maxLength" in node
            if node.get("type") == "array":
                assert "minItems" in node and "maxItems" in node
            for value in node.values():
                walk(value)

    walk(schema)
    assert output_spec(schema).name == "Trajectory"  # usable as an LLM response model as is
