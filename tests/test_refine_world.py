"""The script model's declarative rules, replayed without running any code."""

import copy

import pytest
from pydantic import ValidationError

from factory.records import Trajectory, Turn, TurnError
from factory.refine.narration import WORDS, sentence
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


def told_as(kind, reason, **values):
    """Whether `reason` is one of the DM's phrasings of this refusal, with these names filled in."""
    return reason in {sentence(text.format(**values)) for text in WORDS["refusals"][kind]}


@pytest.mark.parametrize(
    "name, params, error_type, kind, values",
    [
        ("fly", {}, "unknown_action", "unknown_action", {"action": "fly"}),  # its own type, not logic (issue 28)
        ("go", {"place": "attic"}, "parameter", "invalid_value", {"action": "go", "param": "place", "value": "attic"}),
        ("go", {}, "parameter", "missing_param", {"action": "go", "param": "place"}),
        ("go", {"place": "garden", "speed": 2}, "parameter", "unexpected_param", {"action": "go", "param": "speed"}),
        ("water", {"litres": 2}, "location", "player_at", {"place": "the garden", "here": "the kitchen"}),
        ("water", {"litres": "two"}, "parameter", "invalid_value", {"action": "water", "param": "litres", "value": "two"}),
        ("water", {"litres": 2.5}, "parameter", "invalid_value", {"action": "water", "param": "litres", "value": "2.5"}),
        ("water", {"litres": True}, "parameter", "invalid_value", {"action": "water", "param": "litres", "value": "True"}),
        ("go", {"place": 2}, "parameter", "invalid_value", {"action": "go", "param": "place", "value": "2"}),
    ],
)  # fmt: skip
def test_invalid_actions_name_their_error(script, name, params, error_type, kind, values):
    checked = check_action(script, WorldState.initial(script), name, params)
    assert not checked.ok and checked.error_type == error_type and told_as(kind, checked.reason, **values)


def test_the_same_refusal_reads_otherwise_in_another_state_and_alike_on_a_replay(script):
    said = {
        check_action(script, WorldState("kitchen", [], {"kitchen": items}), "water", {"litres": 1}).reason
        for items in (["watering_can"], [], ["a"], ["b"], ["c"], ["d"])
    }
    assert len(said) > 1 and all(told_as("player_at", r, place="the garden", here="the kitchen") for r in said)
    state = WorldState.initial(script)
    assert check_action(script, state, "fly", {}).reason == check_action(script, state.copy(), "fly", {}).reason


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
    assert not refused.ok and refused.error_type == "logic" and "the tap is already open" in refused.reason
    assert '"' not in refused.reason and "tap open" not in refused.reason  # in words, never the fact's id
    closed = step(script, state, "close_tap", {})
    assert closed.after.facts == set() and closed.done is False
    again = check_action(script, closed.after, "close_tap", {})
    assert not again.ok and "the tap is not open" in again.reason and '"' not in again.reason
    assert step(script, closed.after, "water", {"litres": 1}).done is True


def test_refusals_speak_to_the_player_with_display_names(script):
    state = WorldState.initial(script)
    assert told_as("player_at", check_action(script, state, "water", {"litres": 1}).reason,
                   place="the garden", here="the kitchen")  # fmt: skip
    garden = apply_action(script, state, "go", {"place": "garden"})
    assert told_as("has_item", check_action(script, garden, "water", {"litres": 1}).reason, item="the watering can")
    assert told_as("param_at_location", check_action(script, garden, "take", {"item": "watering_can"}).reason,
                   item="the watering can", here="the garden")  # fmt: skip
    holding = apply_action(script, state, "take", {"item": "watering_can"})
    again = check_action(script, holding, "take", {"item": "watering_can"})  # a retake: not "there is none"
    assert again.error_type == "logic" and told_as("already_held", again.reason, item="the watering can")


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
