"""The script model's declarative rules, replayed without running any code."""

import pytest
from pydantic import ValidationError

from factory.records import Trajectory, Turn, TurnError
from factory.refine.script import Script
from factory.refine.world import WorldState, apply_action, check_action, goal_reached

GARDEN = {
    "environment": {
        "locations": [
            {"name": "kitchen", "description": "A small kitchen.", "items": ["watering_can"]},
            {"name": "garden", "description": "Rows of tomatoes.", "items": []},
        ],
        "player": {"location": "kitchen", "inventory": []},
    },
    "task": "Water the tomatoes in the garden.",
    "actions": [
        {"name": "go", "description": "Walk somewhere.",
         "parameters": [{"name": "place", "valid_values": ["kitchen", "garden"]}],
         "effects": [{"kind": "move_to", "param": "place"}]},
        {"name": "take", "description": "Pick up an item here.",
         "parameters": [{"name": "item", "valid_values": ["watering_can"]}],
         "preconditions": [{"kind": "param_at_location", "value": "item"}],
         "effects": [{"kind": "take", "param": "item"}]},
        {"name": "water", "description": "Water the plants with some litres.",
         "parameters": [{"name": "litres", "type": "integer", "valid_values": ["1", "2", "3"]}],
         "preconditions": [{"kind": "player_at", "value": "garden"}, {"kind": "has_item", "value": "watering_can"}]},
    ],
    "goal": {"conditions": [{"kind": "player_at", "value": "garden"}, {"kind": "has_item", "value": "watering_can"}]},
}  # fmt: skip


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


@pytest.mark.parametrize(
    "name, params, error_type, reason",
    [
        ("fly", {}, "logic", "not an available action"),
        ("go", {"place": "attic"}, "parameter", "not a valid place"),
        ("go", {}, "parameter", "missing 'place'"),
        ("go", {"place": "garden", "speed": 2}, "parameter", "unexpected 'speed'"),
        ("water", {"litres": 2}, "location", "only possible at garden"),
        ("water", {"litres": "two"}, "parameter", "not a valid litres"),
        ("water", {"litres": 2.5}, "parameter", "not a valid litres"),
    ],
)
def test_invalid_actions_name_their_error(script, name, params, error_type, reason):
    checked = check_action(script, WorldState.initial(script), name, params)
    assert not checked.ok and checked.error_type == error_type and reason in checked.reason


def test_a_valid_playthrough_reaches_the_goal(script):
    state = WorldState.initial(script)
    steps = [("take", {"item": "watering_can"}), ("go", {"place": "garden"}), ("water", {"litres": "2"})]
    assert goal_reached(script, state) is False
    for name, params in steps:
        checked = check_action(script, state, name, params)
        assert checked.ok, checked.reason
        state = apply_action(script, state, name, params)
    assert state.location == "garden" and state.inventory == ["watering_can"]
    assert goal_reached(script, state) is True


def test_preconditions_track_the_world(script):
    state = WorldState.initial(script)
    state = apply_action(script, state, "go", {"place": "garden"})
    took = check_action(script, state, "take", {"item": "watering_can"})
    assert not took.ok and took.error_type == "location"  # the can is in the kitchen
    watered = check_action(script, state, "water", {"litres": 1})
    assert not watered.ok and watered.error_type == "logic"  # at the garden, but without the can


@pytest.mark.parametrize(
    "patch, message",
    [
        (lambda s: s["environment"]["player"].update(location="roof"), "player starts at unknown location 'roof'"),
        (lambda s: s["actions"][0]["effects"][0].update(param="where"), "refers to missing parameter 'where'"),
        (lambda s: s["actions"].append(dict(s["actions"][0])), "action names repeat"),
        (lambda s: s["goal"]["conditions"].append({"kind": "player_at", "value": "moon"}), "unknown location 'moon'"),
    ],
)
def test_scripts_with_dangling_names_are_rejected(patch, message):
    import copy

    broken = copy.deepcopy(GARDEN)
    patch(broken)
    with pytest.raises(ValidationError, match=message):
        Script.model_validate(broken)


def test_trajectory_stats_count_errors_and_corrections():
    turns = [
        Turn(role="user", content="You are in the kitchen.", kind="observation"),
        Turn(role="assistant", content="go attic", kind="thought_action", error=TurnError(type="parameter")),
        Turn(role="user", content="There is no attic.", kind="observation"),
        Turn(role="assistant", content="go garden", kind="thought_action", loss=True),
        Turn(role="assistant", content="water", kind="thought_action", error=TurnError(type="logic")),
        Turn(role="assistant", content="water again", kind="thought_action", error=TurnError(type="logic")),
        Turn(role="assistant", content="take can", kind="thought_action", loss=True),
    ]
    stats = Trajectory(id="t", source="refine", turns=turns).stats()
    assert stats["errors"] == 3 and stats["errors_by_type"] == {"parameter": 1, "logic": 2}
    assert stats["corrections"] == 2 and stats["assistant_turns"] == 5
