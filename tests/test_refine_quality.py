"""The refine quality report over a real run store of hand-built trajectories, every figure exact."""

from __future__ import annotations

import json

import pytest

from factory.cli import main
from factory.records import Trajectory, Turn, TurnError
from factory.refine.quality import format_quality, goals_along, outcome, refine_quality
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.store import Store

GARDEN = {
    "environment": {
        "locations": [
            {"name": "kitchen", "description": "A small kitchen.", "items": ["watering_can"]},
            {"name": "garden", "description": "Rows of tomatoes.", "items": []},
            {"name": "shed", "description": "Tools.", "items": []},
        ],
        "player": {"location": "kitchen", "inventory": []},
    },
    "task": "Water the tomatoes in the garden.",
    "actions": [
        {"name": "go", "description": "Walk somewhere.",
         "parameters": [{"name": "place", "valid_values": ["kitchen", "garden", "shed"]}],
         "effects": [{"kind": "move_to", "param": "place"}]},
        {"name": "take", "description": "Pick up an item here.",
         "parameters": [{"name": "item", "valid_values": ["watering_can"]}],
         "preconditions": [{"kind": "param_at_location", "value": "item"}],
         "effects": [{"kind": "take", "param": "item"}]},
        {"name": "water", "description": "Water the plants.",
         "parameters": [{"name": "litres", "type": "integer", "valid_values": ["1", "2"]}],
         "preconditions": [{"kind": "player_at", "value": "garden"}, {"kind": "has_item", "value": "watering_can"}]},
    ],
    "goal": {"conditions": [{"kind": "player_at", "value": "garden"}, {"kind": "has_item", "value": "watering_can"}]},
}  # fmt: skip


def porch_without_goal() -> dict:
    """Another environment (a porch, another task) whose script declares no goal: only an LLM judged it."""
    script = json.loads(json.dumps(GARDEN))
    script["task"] = "Find the watering can and bring it to the garden."
    script["environment"]["locations"][2]["name"] = "porch"
    script["actions"][0]["parameters"][0]["valid_values"] = ["kitchen", "garden", "porch"]
    script["goal"] = {"conditions": []}
    return script


TEMPLATE = "I think the next thing to do is go(place=attic)."
OK, PARAMETER, LOCATION = "none", "parameter", "location"
# (thought, action name, params, error): one step per assistant turn.
ROWS = {
    "completes": [("Grab the can first.", "take", {"item": "watering_can"}, OK),
                  (TEMPLATE, "go", {"place": "attic"}, PARAMETER),
                  ("The attic is not a place here; the garden is.", "go", {"place": "garden"}, OK)],
    "early": [(TEMPLATE, "go", {"place": "attic"}, PARAMETER),
              ("I need the can.", "take", {"item": "watering_can"}, OK),
              ("Now to the garden.", "go", {"place": "garden"}, OK),
              ("Water them.", "water", {"litres": "2"}, OK)],  # the goal already held after the previous step
    "no_goal": [("Pick up the can.", "take", {"item": "watering_can"}, OK),
                ("Water right here.", "water", {"litres": "1"}, LOCATION),
                ("I think the next thing to do is go(place=attic) then.", "go", {"place": "attic"}, PARAMETER),
                ("Off to the garden.", "go", {"place": "garden"}, OK)],
    "no_steps": [("Take the can.", "take", {"item": "watering_can"}, OK),
                 ("Go to the garden.", "go", {"place": "garden"}, OK)],
}  # fmt: skip


def turns_of(steps) -> list[Turn]:
    turns = [Turn(role="user", content="You are in the kitchen.", kind="observation")]
    for thought, name, params, error in steps:
        call = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        mistake = TurnError(type=error, feedback="That does not work.") if error != OK else None
        turns.append(Turn(role="assistant", content=f"Thought: {thought}\nAction: {call}", loss=mistake is None,
                          kind="thought_action", error=mistake))  # fmt: skip
        turns.append(Turn(role="user", content="Observation: fine.", kind="observation"))
    return turns[:-1]


def add_row(store: Store, name: str, script: dict, steps, keep_steps: bool = True) -> None:
    save_script(store, f"{name}:0", name, 0, Script.model_validate(script), [])
    stored = [{"thought": t, "action": {"name": a, "params": p}, "observation": "…",
               "evaluation": {"error": e, "task_done": False}} for t, a, p, e in steps]  # fmt: skip
    row = {"trajectory_id": f"refine:{name}", "source": "refine", "persona_id": name, "script_id": f"{name}:0",
           "verified": True, "steps": json.dumps(stored) if keep_steps else None}  # fmt: skip
    save_trajectory(store, row, Trajectory(id=row["trajectory_id"], source="refine", turns=turns_of(steps)))


@pytest.fixture
def run_dir(tmp_path):
    with Store.open(tmp_path) as store:
        for name in ("completes", "early"):
            add_row(store, name, GARDEN, ROWS[name])
        add_row(store, "no_goal", porch_without_goal(), ROWS["no_goal"])
        add_row(store, "no_steps", GARDEN, ROWS["no_steps"], keep_steps=False)  # replayed from its Action lines
        # Neither a failed persona nor a coa row counts, nor the failed persona's script.
        failed = {**GARDEN, "task": "Sweep the yard with a broom before noon."}
        save_script(store, "failed:0", "failed", 0, Script.model_validate(failed), [])
        save_trajectory(store, {"trajectory_id": "refine:failed", "source": "refine", "persona_id": "failed",
                                "script_id": "failed:0", "verified": False, "reason": "not_done"}, None)  # fmt: skip
        coa = Trajectory(id="coa:t1", source="coa", turns=turns_of(ROWS["early"]))
        save_trajectory(store, {"trajectory_id": "coa:t1", "source": "coa", "verified": True}, coa)
    return tmp_path


def test_every_figure_of_the_quality_report(run_dir):
    with Store.open(run_dir, read_only=True) as store:
        q = refine_quality(store)
    assert q["verified"] == 4
    assert q["completion"] == {"completed": 2, "held_before_end": 1, "not_reached": 0, "unknown": 1,
                               "share_completed": 0.5, "share_completed_of_known": 0.6667}  # fmt: skip
    assert q["first_mistake"] == {1: 1, 2: 2} and q["rows_without_mistake"] == 1
    assert q["error_types"] == {"parameter": 3, "location": 1}
    assert q["mistakes_per_row"] == {0: 1, 1: 2, 2: 1}
    assert q["first_turn_trains"] == 0.75  # only "early" opens with a mistake
    assert q["distinct_actions_per_row"] == {"mean": 2.5, "min": 2, "max": 3}
    # 4 mistaken turns: "completes" and "early" share the template thought word for word; all but the
    # location mistake open with the template's words.
    assert q["thoughts"] == {"mistaken_turns": 4, "repeated": 2, "share_repeated": 0.5,
                             "top_prefix": "i think the next thing", "top_prefix_turns": 3, "top_prefix_share": 0.75,
                             "prefix_words": 5}  # fmt: skip
    # Garden task (3 scripts): 4 trigrams each, 4 distinct; porch task: 8 distinct trigrams. 3 actions per script,
    # locations kitchen, garden, shed / porch.
    assert q["diversity"] == {
        "scripts": 4,
        "task_ngrams": {"n": 3, "distinct": 12, "total": 20, "share": 0.6},
        "action_names": {"distinct": 3, "total": 12},
        "location_names": {"distinct": 4, "total": 12},
    }


def test_varied_thoughts_do_not_repeat(tmp_path):
    with Store.open(tmp_path) as store:
        for i, thought in enumerate(["The attic must hold it.", "Maybe an attic exists after all."]):
            add_row(store, f"p{i}", GARDEN, [(thought, "go", {"place": "attic"}, PARAMETER), *ROWS["completes"][-1:]])
        q = refine_quality(store)
    assert q["thoughts"]["repeated"] == 0 and q["thoughts"]["share_repeated"] == 0.0
    assert q["thoughts"]["top_prefix"] == "maybe an attic exists after" and q["thoughts"]["top_prefix_share"] == 0.5
    assert q["first_mistake"] == {1: 2} and q["first_turn_trains"] == 0.0
    assert q["completion"]["completed"] == 0 and q["completion"]["not_reached"] == 2  # never picked up the can


@pytest.mark.parametrize(
    "goals, expected",
    [([False, False, True], "completed"), ([False, True, True], "held_before_end"), ([True, True], "held_before_end"),
     ([False, True, False], "not_reached"), ([None, None], "unknown"), ([False], "unknown")],
)  # fmt: skip
def test_outcome_of_a_goal_trace(goals, expected):
    assert outcome(goals) == expected


def test_refused_actions_leave_the_world_unchanged():
    script = Script.model_validate(GARDEN)
    take, go = ("take", {"item": "watering_can"}), ("go", {"place": "garden"})
    assert goals_along(script, [(*take, True), (*go, True)]) == [False, False, True]
    # refused by the DM (e.g. validation code) though the rules allow it: the can stays in the kitchen
    assert goals_along(script, [(*take, False), (*go, True)]) == [False, False, False]


def test_an_empty_store_and_the_text_summary(run_dir, tmp_path):
    with Store.open(tmp_path / "empty") as store:
        empty = refine_quality(store)
    assert empty["verified"] == 0 and empty["completion"]["share_completed"] is None and empty["first_mistake"] == {}
    assert format_quality(empty) == "refine quality: no verified refine trajectories"
    with Store.open(run_dir, read_only=True) as store:
        text = format_quality(refine_quality(store))
    assert "last action completes the task: 2/4 (50.0%)" in text
    assert "goal held before the end: 1" in text and "unknown (no goal or not replayable): 1" in text
    assert "first mistake at assistant turn (turn: rows): 1: 1, 2: 2" in text
    assert 'most common opening "i think the next thing" 3/4 (75.0%)' in text


def test_the_quality_command(run_dir, tmp_path, capsys):
    assert main(["quality", str(run_dir), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["completion"]["completed"] == 2 and figures["mistakes_per_row"] == {"0": 1, "1": 2, "2": 1}
    assert main(["quality", str(run_dir)]) == 0
    assert capsys.readouterr().out.startswith("refine quality (4 verified trajectories)")
    assert main(["quality", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == f"error: no run store at {tmp_path / 'nowhere' / 'factory.sqlite'}"
