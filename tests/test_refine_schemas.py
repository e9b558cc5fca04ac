"""Per-script trajectory schemas: the script's vocabulary, bounded everywhere."""

import jsonschema
import pytest
from test_refine_world import GARDEN

from factory.llm.structured import output_spec
from factory.refine.schemas import script_vocabulary, to_wire, trajectory_schema
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


def test_vocabulary_holds_values_places_and_items():
    assert script_vocabulary(Script.model_validate(GARDEN)) == [
        "garden",
        "kitchen",
        "watering_can",
    ]  # integers go typed


def test_a_wrong_but_in_vocabulary_value_is_allowed(schema):
    jsonschema.validate({"steps": [step(params={"place": "watering_can"}, error="parameter")]}, schema)


@pytest.mark.parametrize(
    "bad",
    [
        {"steps": []},
        {"steps": [step(name="fly")]},
        {"steps": [step(params={"place": "attic"})]},
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
