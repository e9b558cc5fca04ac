"""The slip taxonomy (issue 26): what a refused move is, which ones may be injected, the learned mix, and the
figures that count kinds, template DM lines and fact ids in the stored rows."""

import json
import random

import pytest
from test_refine_world import GARDEN

from factory.refine.quality_dm import dm_lines, slip_kinds, world_refusals
from factory.refine.script import Script
from factory.refine.slips import (
    SlipMix,
    classify,
    consistent,
    finishing_actions,
    label_slips,
    learned_counts,
    phase,
    replay_states,
    slips_here,
)  # fmt: skip
from factory.refine.world import WorldState
from factory.store import Store

# The garden, with a shed that must be unlocked before the water can be reached from the tap.
SHED = {**GARDEN, "environment": {**GARDEN["environment"], "facts": [{"name": "tomatoes_watered"},
                                                                     {"name": "tap_open"}]},  # fmt: skip
        "actions": GARDEN["actions"][:2] + [
            {"name": "open_tap", "description": "Open the garden tap.", "preconditions": [
                {"kind": "player_at", "value": "garden"}, {"kind": "fact_false", "value": "tap_open"}],
             "effects": [{"kind": "set_fact", "value": "tap_open"}]},
            {**GARDEN["actions"][2], "preconditions": GARDEN["actions"][2]["preconditions"] + [
                {"kind": "fact_true", "value": "tap_open"}]}]}  # fmt: skip


@pytest.fixture
def shed():
    return Script.model_validate(SHED)


def at(location, inventory=(), facts=(), can_in_kitchen=None):
    held = list(inventory)
    items = {"kitchen": [] if "watering_can" in held or can_in_kitchen is False else ["watering_can"]}
    return WorldState(location, held, items, set(facts))


@pytest.mark.parametrize(
    "history, call, kind",
    [
        ([at("kitchen")], ("water", {"litres": 9}), "wrong_amount"),
        ([at("kitchen")], ("go", {"place": "attic"}), "wrong_value"),
        ([at("kitchen")], ("water", {"litres": 2}), "wrong_place"),
        ([at("garden")], ("take", {"item": "watering_can"}), "wrong_place"),  # the can is in the kitchen
        ([at("garden", facts=["tap_open"])], ("water", {"litres": 2}), "missing_item"),
        ([at("garden", ["watering_can"])], ("water", {"litres": 2}), "premature_finish"),  # the tap is shut
        ([at("kitchen"), at("kitchen", ["watering_can"])], ("take", {"item": "watering_can"}), "stale_belief"),
        ([at("garden", facts=["tap_open"])], ("open_tap", {}), "stale_belief"),  # already done
        ([at("kitchen")], ("fly", {}), "unknown_action"),
    ],
)
def test_each_refused_move_is_one_kind_of_slip(shed, history, call, kind):
    assert classify(shed, history, *call) == kind


def test_an_allowed_move_is_no_slip_of_the_player(shed):
    assert classify(shed, [at("kitchen")], "take", {"item": "watering_can"}) == "judged_by_dm"


def test_skipped_step_is_a_prerequisite_of_a_move_that_does_not_finish(shed):
    skipping = {**SHED, "actions": SHED["actions"] + [
        {"name": "weed", "description": "Weed the beds.", "preconditions": [{"kind": "fact_true", "value": "tap_open"}],
         "effects": [{"kind": "clear_fact", "value": "tap_open"}]}]}  # fmt: skip
    script = Script.model_validate(skipping)
    assert finishing_actions(script) == {"water"}
    assert classify(script, [at("garden")], "weed", {}) == "skipped_step"


def test_a_slip_the_last_observation_just_ruled_out_is_not_offered(shed):
    before, after = at("kitchen"), at("kitchen", ["watering_can"])
    assert not consistent(shed, [before, after], "take", {"item": "watering_can"})  # it was just picked up
    left = [at("kitchen"), at("kitchen", ["watering_can"]), at("garden", ["watering_can"])]
    assert consistent(shed, left, "take", {"item": "watering_can"})  # two moves later it may be forgotten
    assert "stale_belief" in slips_here(shed, left, set(), finishing_actions(shed))


def test_a_wrong_amount_goes_only_on_a_move_a_right_amount_would_make_work(shed):
    ready = at("garden", ["watering_can"], ["tap_open"])
    found = slips_here(shed, [ready, ready], set(), finishing_actions(shed))
    assert sorted(p["litres"] for _, p in found["wrong_amount"]) == [4, 5]
    stuck = at("kitchen")  # watering here fails whatever the amount
    assert "wrong_amount" not in slips_here(shed, [stuck, stuck], set(), finishing_actions(shed))


def test_moves_the_row_already_holds_are_not_offered_again(shed):
    ready = at("garden", ["watering_can"], ["tap_open"])
    used = {"water:[('litres', '4')]", "water:[('litres', '5')]"}
    assert "wrong_amount" not in slips_here(shed, [ready, ready], used, finishing_actions(shed))


def step(name, params, error="none", done=False, **extra):
    return {"thought": "t", "action": {"name": name, "params": params}, "dm_thinking": "d", "observation": "o",
            "evaluation": {"error": error, "task_done": done}, **extra}  # fmt: skip


ROW = [step("water", {"litres": 2}, "location"), step("take", {"item": "watering_can"}), step("go", {"place": "garden"}),
       step("open_tap", {}), step("water", {"litres": 7}, "parameter", injected="wrong_amount",
                                  slip="wrong_amount", phase="closing"),
       step("water", {"litres": 2}, done=True)]  # fmt: skip


def test_rows_label_every_mistake_with_its_kind_and_phase(shed):
    labelled = label_slips(shed, ROW)
    assert [(s.get("slip"), s.get("phase")) for s in labelled] == [
        ("wrong_place", "opening"),
        (None, None),
        (None, None),
        (None, None),
        ("wrong_amount", "closing"),
        (None, None),
    ]
    assert phase(ROW, 2) == "middle" and phase(ROW, 5) == "closing"
    assert len(replay_states(shed, ROW)) == len(ROW) + 1


def save_rows(store: Store, script: Script, rows: list[list[dict]]) -> None:
    from factory.refine.store import save_script

    save_script(store, "s", "p", 0, script, [])
    for n, steps in enumerate(rows):
        store.execute(
            "INSERT INTO trajectories (trajectory_id, source, persona_id, script_id, verified, steps) "
            "VALUES (?, 'refine', 'p', 's', true, ?)", [f"refine:p{n}", json.dumps(label_slips(script, steps))])  # fmt: skip


def test_the_mix_learns_what_the_model_already_makes_and_where(shed, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    save_rows(store, shed, [ROW] * 30)
    counts = learned_counts(store)
    assert counts == {"opening": {"wrong_place": 30}}  # injected slips are not the model's
    learned, even = SlipMix(counts=counts).weights("middle"), SlipMix().weights("middle")
    assert learned["wrong_place"] < 0.6 * even["wrong_place"]  # it makes these itself: fewer injected
    assert learned["missing_item"] == pytest.approx(even["missing_item"])
    mix = SlipMix(counts=counts)
    assert mix.fit("opening", "wrong_place") == 1.0 and mix.fit("middle", "wrong_place") < 1.0
    assert SlipMix().weights("middle", {"missing_item"})["missing_item"] < even["missing_item"]  # the row has one
    drawn = [SlipMix().draw({"wrong_place": [], "stale_belief": []}, None, set(), random.Random(i)) for i in range(400)]
    assert 150 <= drawn.count("wrong_place") <= 250


def test_the_figures_count_kinds_template_lines_and_fact_ids(shed, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    templated = [dict(s) for s in ROW]
    templated[4]["observation"] = "That will not work: the litres cannot be 7."  # a world refusal word for word
    templated[0]["observation"] = 'Not yet: that needs "tap open" to be done first.'
    written = [dict(s) for s in ROW]
    written[4]["observation"] = "The can only holds so much; seven litres would spill over the rim."
    save_rows(store, shed, [templated, written])
    kinds = slip_kinds(store)
    assert kinds["mistakes"] == 4 and kinds["kinds"]["wrong_amount"]["injected"] == 2
    assert kinds["kinds_above_floor"] == 2
    lines = dm_lines(store)
    assert lines["injected_steps"] == 2 and lines["template_lines_on_injected"] == 1
    assert lines["with_fact_ids"] == 1 and "tap open" in lines["fact_id_examples"][0]["line"]
    assert world_refusals().match("You don't have the watering can with you.")
    assert not world_refusals().match("You pat your pockets: no watering can.")
