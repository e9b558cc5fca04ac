"""The script model's declarative rules, replayed without running any code."""

import copy

import pytest
from pydantic import ValidationError

from factory.records import Trajectory, Turn, TurnError
from factory.refine.script import Script
from factory.refine.world import WorldState, apply_action, check_action, goal_reached, step

GARDEN = {
    "environment": {
        "locations": [
            {"name": "kitchen", "description": "A small kitchen.", "items": ["watering_can"]},
            {"name": "garden", "description": "Rows of tomatoes.", "items": []},
        ],
        "player": {"location": "kitchen", "inventory": []},
        "facts": [{"name": "tomatoes_watered"}],
    },
    "task": "Water the tomatoes in the garden.",
    "actions": [
        {"name": "go", "description": "Walk somewhere.",
         "parameters": [{"name": "place", "valid_values": ["kitchen", "garden"]}],
         "effects": [{"kind": "move_to", "value": "place"}]},
        {"name": "take", "description": "Pick up an item here.",
         "parameters": [{"name": "item", "valid_values": ["watering_can"]}],
         "preconditions": [{"kind": "param_at_location", "value": "item"}],
         "effects": [{"kind": "take", "value": "item"}]},
        {"name": "water", "description": "Water the plants with some litres.",
         "parameters": [{"name": "litres", "type": "integer", "valid_values": ["1", "2", "3"]}],
         "preconditions": [{"kind": "player_at", "value": "garden"}, {"kind": "has_item", "value": "watering_can"}],
         "effects": [{"kind": "set_fact", "value": "tomatoes_watered"}]},
    ],
    "goal": {"conditions": [{"kind": "fact_true", "value": "tomatoes_watered"}]},
}  # fmt: skip


@pytest.fixture
def script():
    return Script.model_validate(GARDEN)


@pytest.mark.parametrize(
    "name, params, error_type, reason",
    [
        ("fly", {}, "logic", "You cannot fly here: it is not one of the actions you can take."),
        ("go", {"place": "attic"}, "parameter", "the place cannot be"),
        ("go", {}, "parameter", "To go you need to say which place."),
        ("go", {"place": "garden", "speed": 2}, "parameter", "Go takes no speed."),
        ("water", {"litres": 2}, "location", "You can only do that in the garden, and you are in the kitchen."),
        ("water", {"litres": "two"}, "parameter", "the litres cannot be"),
        ("water", {"litres": 2.5}, "parameter", "the litres cannot be"),
        ("water", {"litres": True}, "parameter", "the litres cannot be"),
        ("go", {"place": 2}, "parameter", "the place cannot be"),
    ],
)
def test_invalid_actions_name_their_error(script, name, params, error_type, reason):
    checked = check_action(script, WorldState.initial(script), name, params)
    assert not checked.ok and checked.error_type == error_type and reason in checked.reason


def test_a_valid_playthrough_reaches_the_goal_at_its_last_action(script):
    state = WorldState.initial(script)
    calls = [("take", {"item": "watering_can"}), ("go", {"place": "garden"}), ("water", {"litres": "2"})]
    assert goal_reached(script, state) is False
    for index, (name, params) in enumerate(calls):
        moved = step(script, state, name, params)
        assert moved.check.ok, moved.check.reason
        assert moved.done is (index == len(calls) - 1)  # the task's own action completes it, not a step earlier
        state = moved.after
    assert state.location == "garden" and state.inventory == ["watering_can"] and state.facts == {"tomatoes_watered"}


def test_step_hands_typed_values_to_the_extra_check_and_refuses_in_its_words(script):
    seen = []

    def extra(name, params, state):
        seen.append(params)
        return (False, "The hose is frozen.") if name == "water" else None

    state = WorldState("garden", ["watering_can"], {}, set())
    moved = step(script, state, "water", {"litres": "2"}, extra)
    assert seen == [{"litres": 2}]  # text from the player, the declared integer to the check
    assert not moved.check.ok and moved.check.error_type == "logic" and moved.check.reason == "The hose is frozen."
    assert moved.after is state and moved.done is False
    assert step(script, state, "go", {"place": "kitchen"}, extra).check.ok


def test_facts_are_set_cleared_and_checked():
    data = copy.deepcopy(GARDEN)
    data["environment"]["facts"].append({"name": "tap_open", "initially": True})
    data["actions"].append({"name": "close_tap", "description": "Close the tap.",
                            "preconditions": [{"kind": "fact_true", "value": "tap_open"}],
                            "effects": [{"kind": "clear_fact", "value": "tap_open"}]})  # fmt: skip
    data["actions"][2]["preconditions"].append({"kind": "fact_false", "value": "tap_open"})
    script = Script.model_validate(data)
    state = WorldState("garden", ["watering_can"], {}, {"tap_open"})
    refused = check_action(script, state, "water", {"litres": 1})
    assert not refused.ok and refused.error_type == "logic" and refused.reason == 'That is already done: "tap open".'
    closed = step(script, state, "close_tap", {})
    assert closed.after.facts == set() and closed.done is False
    again = check_action(script, closed.after, "close_tap", {})
    assert not again.ok and again.reason == 'Not yet: that needs "tap open" to be done first.'
    assert step(script, closed.after, "water", {"litres": 1}).done is True


def test_refusals_speak_to_the_player_with_display_names(script):
    state = WorldState.initial(script)
    assert check_action(script, state, "water", {"litres": 1}).reason.startswith("You can only do that in the garden")
    garden = apply_action(script, state, "go", {"place": "garden"})
    assert (
        check_action(script, garden, "water", {"litres": 1}).reason
        == "You need the watering can, but you are not carrying it."
    )
    assert (
        check_action(script, garden, "take", {"item": "watering_can"}).reason
        == "You do not see the watering can here in the garden."
    )
    holding = apply_action(script, state, "take", {"item": "watering_can"})
    again = check_action(script, holding, "take", {"item": "watering_can"})  # a retake: not "there is none"
    assert (again.error_type, again.reason) == ("logic", "You are already carrying the watering can.")


def test_a_fact_an_action_sets_needs_no_declaration():
    data = copy.deepcopy(GARDEN)
    del data["environment"]["facts"]  # tomatoes_watered: set by water, false at the start
    script = Script.model_validate(data)
    assert script.fact_names() == ["tomatoes_watered"] and WorldState.initial(script).facts == set()
    state = WorldState("garden", ["watering_can"], {})
    assert step(script, state, "water", {"litres": 1}).done is True


def test_scripts_written_before_facts_still_load():
    old = copy.deepcopy(GARDEN)
    del old["environment"]["facts"]
    old["actions"][0]["effects"] = [{"kind": "move_to", "param": "place"}]  # the old key
    old["actions"][2]["effects"] = []
    old["goal"] = {"conditions": [{"kind": "player_at", "value": "garden"}]}
    script = Script.model_validate(old)
    assert script.actions[0].effects[0].value == "place" and WorldState.initial(script).facts == set()


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
        (lambda s: s["actions"][0]["effects"][0].update(value="where"), "refers to missing parameter 'where'"),
        (lambda s: s["actions"].append(dict(s["actions"][0])), "action names repeat"),
        (lambda s: s["goal"]["conditions"].append({"kind": "player_at", "value": "moon"}), "unknown location 'moon'"),
        (
            lambda s: s["goal"]["conditions"].append({"kind": "fact_true", "value": "roses_cut"}),
            "goal uses fact 'roses_cut', which no action sets and environment.facts does not declare",
        ),
        (
            lambda s: s["actions"][2]["preconditions"].append({"kind": "fact_false", "value": "pots_full"}),
            "action 'water' uses fact 'pots_full', which no action sets",
        ),
        (lambda s: s["actions"][2]["effects"].clear(), "fact 'tomatoes_watered' must be true but no action sets it"),
        (lambda s: s["environment"]["facts"].append({"name": "tomatoes_watered"}), "fact names repeat"),
    ],
)
def test_scripts_with_dangling_names_are_rejected(patch, message):
    broken = copy.deepcopy(GARDEN)
    patch(broken)
    with pytest.raises(ValidationError, match=message):
        Script.model_validate(broken)
    assert Script.model_validate(GARDEN)  # the unpatched script has none of these problems


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
    assert stats.errors == 3 and stats.errors_by_type == {"parameter": 1, "logic": 2}
    assert stats.corrections == 2 and stats.assistant_turns == 5


def test_items_in_hand_and_dropped():
    import json

    from factory.paths import prompts_dir

    library = Script.model_validate(json.loads((prompts_dir() / "refine" / "script_examples.json").read_text())[1])
    state = WorldState("stacks", [], {"front_desk": ["returned_book"]}, {"return_logged"})
    refused = check_action(library, state, "shelve", {"book": "returned_book", "shelf": 12})
    assert (
        not refused.ok and refused.error_type == "logic" and refused.reason == "You are not carrying the returned book."
    )
    held = WorldState("stacks", ["returned_book"], {"stacks": []}, {"return_logged"})
    shelved = step(library, held, "shelve", {"book": "returned_book", "shelf": "14"})
    assert shelved.done and shelved.after.inventory == [] and shelved.after.items_at["stacks"] == ["returned_book"]
