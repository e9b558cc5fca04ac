"""Grounded thoughts (refine/grounded_thoughts.py): a trained thought asserting a state nothing showed is
caught with its reason, one stating what it saw (or a plan, or a guess) is not; the row's stats, the
`grounded_thoughts` filter and the quality figure, over a real store."""

from __future__ import annotations

import json

import pytest

from factory.filters import parse_filters, run_filters
from factory.records import Trajectory, Turn
from factory.refine.grounded_thoughts import check_thoughts
from factory.refine.quality_rows import format_row_quality, row_quality
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.store import Store

WARD = Script.model_validate({
    "environment": {
        "locations": [{"name": "ward", "description": "A quiet ward.", "items": ["patient_chart"]},
                      {"name": "storeroom", "description": "Shelves.", "items": ["drug_key"]}],
        "player": {"location": "ward", "inventory": []},
        "facts": [{"name": "vitals_checked"}]},
    "task": "Check the patient's vitals and fetch the drug key from the storeroom.",
    "actions": [
        {"name": "go", "description": "Walk somewhere.",
         "parameters": [{"name": "place", "valid_values": ["ward", "storeroom"]}],
         "effects": [{"kind": "move_to", "value": "place"}]},
        {"name": "take", "description": "Pick up an item here.",
         "parameters": [{"name": "item", "valid_values": ["patient_chart", "drug_key"]}],
         "preconditions": [{"kind": "param_at_location", "value": "item"}],
         "effects": [{"kind": "take", "value": "item"}]},
        {"name": "check_vitals", "description": "Check the patient's vitals.",
         "parameters": [{"name": "arm", "valid_values": ["left", "right"]}],
         "preconditions": [{"kind": "player_at", "value": "ward"}],
         "effects": [{"kind": "set_fact", "value": "vitals_checked"}]}],
    "goal": {"conditions": [{"kind": "fact_true", "value": "vitals_checked"}, {"kind": "has_item", "value": "drug_key"}]},
})  # fmt: skip
VITALS, STORE, KEY = ("check_vitals", {"arm": "left"}), ("go", {"place": "storeroom"}), ("take", {"item": "drug_key"})
# (thought, (action, params), observation): every move accepted, every turn trained.
ROWS = {
    "ungrounded": [("I'll check the vitals first.", VITALS, "check_vitals(arm=left) worked."),
                   ("His vitals are stable. Now the key.", STORE, "You walk over to the storeroom."),
                   ("Taking the key.", KEY, "You pick up the drug key.")],
    "grounded": [("I'll check the vitals first.", VITALS, "check_vitals(arm=left) worked."),
                 ("The vitals are checked now. The key might be in the storeroom, so I'll look there.", STORE,
                  "You walk over to the storeroom. You see the drug key."),
                 ("I'm in the storeroom and the drug key is here.", KEY, "You pick up the drug key."),
                 ("I have the key. Back to the ward.", ("go", {"place": "ward"}), "You head to the ward.")],
}  # fmt: skip
FIRST = "'his vitals are stable' (turn 2): 'stable' about vitals: nothing the player read says so"


def turns_and_steps(steps) -> tuple[list[Turn], list[dict]]:
    turns = [
        Turn(role="user", content=f"Task: {WARD.task}\nObservation: You are in the ward. You see the patient chart.")
    ]
    stored = []
    for thought, (name, params), observation in steps:
        call = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        turns += [Turn(role="assistant", content=f"Thought: {thought}\nAction: {call}", loss=True, kind="thought_action"),
                  Turn(role="user", content=f"Observation: {observation}", kind="observation")]  # fmt: skip
        stored.append({"thought": thought, "action": {"name": name, "params": params}, "observation": observation,
                       "evaluation": {"error": "none", "task_done": False}})  # fmt: skip
    return turns[:-1], stored


def check(name: str):
    turns, steps = turns_and_steps(ROWS[name])
    return check_thoughts(WARD, [t.model_dump() for t in turns], steps)


def test_an_unobserved_state_is_caught_with_its_reason():
    result = check("ungrounded")
    assert (result.trained, result.assertions, result.ungrounded_thoughts) == (3, 1, 1)
    assert result.ungrounded[0].text() == FIRST


def test_what_was_shown_true_in_the_world_a_plan_and_a_guess_are_grounded():
    result = check("grounded")
    # the vitals checked (the world's fact), the player's place, the key's place, the key held: 4 assertions
    assert (result.trained, result.assertions, result.ungrounded) == (4, 4, [])


def test_a_claim_the_world_contradicts_is_caught():
    steps = [("The drug key is here in the ward. I have the key.", ("take", {"item": "patient_chart"}), "ok")]
    turns, stored = turns_and_steps(steps)
    result = check_thoughts(WARD, [t.model_dump() for t in turns], stored)
    assert [f.reason for f in result.ungrounded] == ["drug key is not in ward", "the player does not hold drug key"]
    assert result.ungrounded_thoughts == 1


def test_a_claim_spliced_to_a_hedge_by_a_comma_is_still_read():
    """ "I am in the storeroom, I can take the key" asserts a place; the hedge of the second clause is its own
    (read as one clause, the embedded model's rows kept such claims about a room it was not in)."""
    steps = [("I'm in the storeroom, I can take the key now.", ("take", {"item": "patient_chart"}), "ok"),
             ("I am in the ward, I could check his vitals.", VITALS, "check_vitals(arm=left) worked.")]  # fmt: skip
    turns, stored = turns_and_steps(steps)
    result = check_thoughts(WARD, [t.model_dump() for t in turns], stored)
    assert result.assertions == 2 and [f.reason for f in result.ungrounded] == ["the player is in ward"]


@pytest.fixture
def run_dir(tmp_path):
    with Store.open(tmp_path) as store:
        for name, steps in ROWS.items():
            save_script(store, f"{name}:0", name, 0, WARD, [])
            turns, stored = turns_and_steps(steps)
            row = {"trajectory_id": f"refine:{name}", "source": "refine", "persona_id": name,
                   "script_id": f"{name}:0", "verified": True, "steps": json.dumps(stored)}  # fmt: skip
            save_trajectory(store, row, Trajectory(id=row["trajectory_id"], source="refine", turns=turns))
        # A row written before the check (no script stored): unknown, kept by default.
        save_trajectory(store, {"trajectory_id": "refine:old", "source": "refine", "persona_id": "old",
                                "verified": True}, Trajectory(id="refine:old", source="refine", turns=turns))  # fmt: skip
    return tmp_path


def test_the_row_stats_record_the_check(run_dir):
    with Store.open(run_dir, read_only=True) as store:
        stats = dict(store.query("SELECT trajectory_id, stats FROM trajectories"))
    bad, good = json.loads(stats["refine:ungrounded"]), json.loads(stats["refine:grounded"])
    assert (bad["state_assertions"], bad["ungrounded_thoughts"], bad["ungrounded_thought"]) == (1, 1, FIRST)
    assert (good["state_assertions"], good["ungrounded_thoughts"], "ungrounded_thought" in good) == (4, 0, False)
    assert "ungrounded_thoughts" not in json.loads(stats["refine:old"])


def verdicts(run_dir, spec: dict) -> dict:
    assert run_filters(run_dir, config=parse_filters([spec], "test.yaml")) is not None
    with Store.open(run_dir, read_only=True) as store:
        return {
            t: (k, r)
            for t, k, r in store.query(
                "SELECT trajectory_id, keep, reason FROM filter_verdicts WHERE filter = ?", [spec["name"]]
            )
        }


def test_the_filter_drops_exactly_the_ungrounded_row(run_dir):
    assert verdicts(run_dir, {"name": "grounded_thoughts", "kind": "grounded_thoughts"}) == {
        "refine:ungrounded": (False, f"ungrounded thoughts: 1 ({FIRST})"),
        "refine:grounded": (True, None),
        "refine:old": (True, "grounding unknown: no thought check recorded"),  # kept, with the note
    }
    strict = verdicts(run_dir, {"name": "strict", "kind": "grounded_thoughts", "unknown_passes": False})
    assert strict["refine:old"] == (False, "grounding unknown: no thought check recorded")
    loose = verdicts(run_dir, {"name": "loose", "kind": "grounded_thoughts", "max_ungrounded": 1})
    assert loose["refine:ungrounded"] == (True, None)


def test_the_quality_figure(run_dir):
    with Store.open(run_dir, read_only=True) as store:
        q = row_quality(store)
    g = q["grounding"]
    assert (g["rows"], g["checked_rows"], g["unchecked_rows"], g["trained_thoughts"]) == (3, 2, 1, 7)
    assert (g["state_assertions"], g["ungrounded_assertions"], g["ungrounded_assertion_rate"]) == (5, 1, 0.2)
    assert (g["ungrounded_thoughts"], g["rows_with_ungrounded"]) == (1, 1)
    assert g["examples"] == [{"trajectory_id": "refine:ungrounded", "example": FIRST}]
    assert "grounded thoughts: 1/5 state assertions ungrounded (20.0%); 1/7 trained thoughts, 1/2 rows " \
        "(1 rows unchecked)" in format_row_quality(q)  # fmt: skip
