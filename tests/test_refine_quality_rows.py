"""The within-row quality figures (refine/quality_rows.py) over real run stores of hand-built rows, each
figure checked on rows built to have the defect and rows built not to."""

from __future__ import annotations

import json

import pytest
from test_refine_quality import GARDEN

from factory.cli import main
from factory.records import Trajectory, Turn, TurnError
from factory.refine.quality_rows import format_row_quality, row_quality
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.reporting.build import write_report
from factory.store import Store

OK = "none"
TAKE, GARDEN_GO, KITCHEN_GO = (
    ("take", {"item": "watering_can"}),
    ("go", {"place": "garden"}),
    ("go", {"place": "kitchen"}),
)
ATTIC = ("go", {"place": "attic"})
REFUSED_ATTIC = "That will not work: the place cannot be attic."
# (thought, (action, params), error, observation, injected kind or None): one step per assistant turn.
ROWS = {
    "repeats": [("Grab the can.", TAKE, OK, "You pick up the watering can.", None),
                ("Off to the attic.", ATTIC, "parameter", REFUSED_ATTIC, "parameter"),
                ("Off to  the ATTIC.", ATTIC, "parameter", REFUSED_ATTIC, "parameter"),  # the same move, injected twice
                ("The garden, then.", GARDEN_GO, OK, "You are in the garden.", None)],
    "varied": [("Walk to the garden first.", GARDEN_GO, OK, "You are in the garden.", None),
               ("Water them now.", ("water", {"litres": 2}), "logic", "You have nothing to water with.", "logic"),
               ("Back for the can.", KITCHEN_GO, OK, "You are back in the kitchen.", None),
               ("Take it.", TAKE, OK, "You pick up the watering can.", None),
               ("To the garden again.", GARDEN_GO, OK, "You are in the garden.", None)],  # a move again, after a fix
    "late": [("Look around the kitchen.", KITCHEN_GO, OK, "You are in the kitchen.", None),
             ("Take the can.", TAKE, OK, "You pick up the watering can.", None),
             ("Water here.", ("water", {"litres": 1}), "location",
              "You can only do that in the garden, and you are in the kitchen.", None),  # the LLM's own mistake
             ("Go to the garden.", GARDEN_GO, OK, "You are in the garden.", None)],
}  # fmt: skip


def add_row(store: Store, name: str, steps, script: dict = GARDEN) -> None:
    save_script(store, f"{name}:0", name, 0, Script.model_validate(script), [])
    turns = [Turn(role="user", content="You are in the kitchen. Task: water the tomatoes.", kind="observation")]
    stored = []
    for thought, (action, params), error, observation, injected in steps:
        call = f"{action}({', '.join(f'{k}={v}' for k, v in params.items())})"
        mistake = TurnError(type=error, feedback=observation) if error != OK else None
        turns += [Turn(role="assistant", content=f"Thought: {thought}\nAction: {call}", loss=mistake is None,
                       kind="thought_action", error=mistake),
                  Turn(role="user", content=f"Observation: {observation}", kind="observation")]  # fmt: skip
        stored.append({"thought": thought, "action": {"name": action, "params": params}, "observation": observation,
                       "evaluation": {"error": error, "task_done": False}, **({"injected": injected} if injected else {})})  # fmt: skip
    row = {"trajectory_id": f"refine:{name}", "source": "refine", "persona_id": name, "script_id": f"{name}:0",
           "verified": True, "steps": json.dumps(stored)}  # fmt: skip
    save_trajectory(store, row, Trajectory(id=row["trajectory_id"], source="refine", turns=turns[:-1]))


@pytest.fixture
def run_dir(tmp_path):
    with Store.open(tmp_path) as store:
        for name, steps in ROWS.items():
            add_row(store, name, steps)
        # An unverified row with every defect counts for nothing.
        save_script(store, "failed:0", "failed", 0, Script.model_validate(GARDEN), [])
        save_trajectory(store, {"trajectory_id": "refine:failed", "source": "refine", "persona_id": "failed",
                                "script_id": "failed:0", "verified": False, "reason": "not_done"}, None)  # fmt: skip
    return tmp_path


def figures(run_dir) -> dict:
    with Store.open(run_dir, read_only=True) as store:
        return row_quality(store)


def test_repeats_inside_a_row(run_dir):
    rep = figures(run_dir)["repeats"]
    # "repeats" makes the same refused, injected move twice with the same thought (case and spaces aside);
    # "varied" goes to the garden twice, the second time after fetching the can: a move again, nothing else.
    assert rep["moves"] == {"turns": 13, "repeated": 2, "share": 0.1538, "rows_with_repeat": 2, "rows": 3}
    assert rep["mistakes"] == {"turns": 4, "repeated": 1, "share": 0.25, "rows_with_repeat": 1, "rows": 3}
    assert rep["injected"] == {"turns": 3, "repeated": 1, "share": 0.3333, "rows_with_repeat": 1, "rows": 2}
    assert rep["thoughts"] == {"turns": 13, "repeated": 1, "share": 0.0769, "rows_with_repeat": 1, "rows": 3}


def test_the_same_mistake_for_another_reason_is_not_a_repeat(tmp_path):
    with Store.open(tmp_path) as store:
        add_row(store, "two_reasons", [ROWS["late"][0], ("Water.", ("water", {"litres": 1}), "location", "Not here.", None),
                                       ("Water.", ("water", {"litres": 1}), "logic", "No can.", "logic"),
                                       ROWS["late"][-1]])  # fmt: skip
        rep = row_quality(store)["repeats"]
    assert rep["moves"]["repeated"] == 1 and rep["thoughts"]["repeated"] == 1
    assert rep["mistakes"]["repeated"] == 0 and rep["injected"] == {**rep["injected"], "turns": 1, "repeated": 0}


def test_observation_skeletons(run_dir):
    obs = figures(run_dir)["observations"]
    # 10 observations (the last step's answer is not a turn): the script's names masked in either form
    # ("watering can", "garden", "water", the parameter "place"); "attic" is not a name of the script.
    assert (obs["observations"], obs["rows"], obs["distinct_skeletons"]) == (10, 3, 6)
    assert obs["in_shared_skeleton"] == 5 and obs["share_in_shared_skeleton"] == 0.5  # pick up x3, are in x2
    assert obs["top"][:3] == [
        {"skeleton": "you pick up the <name>.", "observations": 3, "share": 0.3, "rows": 3, "share_rows": 1.0},
        {"skeleton": "you are in the <name>.", "observations": 2, "share": 0.2, "rows": 2, "share_rows": 0.6667},
        {"skeleton": "that will not work: the <name> cannot be attic.", "observations": 2, "share": 0.2, "rows": 1,
         "share_rows": 0.3333},
    ]  # fmt: skip


def test_calls_quotes_numbers_and_ids_are_masked(tmp_path):
    lines = ["take(item=watering_can) worked.", "go(place=garden) worked.", 'Not yet: that needs "can filled" first.',
             "You pour 2 cups.", "You pour 15 cups.", "The rusty_key is gone.", "done"]  # fmt: skip
    with Store.open(tmp_path) as store:
        add_row(store, "machine", [(f"step {i}", TAKE, OK, line, None) for i, line in enumerate(lines)])
        top = {t["skeleton"]: t["observations"] for t in row_quality(store)["observations"]["top"]}
    assert top == {"<call> worked.": 2, "you pour <n> cups.": 2, 'not yet: that needs "<q>" first.': 1,
                   "the <name> is gone.": 1}  # fmt: skip


def test_mistake_kinds(run_dir):
    kinds = figures(run_dir)["mistake_kinds"]
    assert kinds["mistakes"] == 4
    assert kinds["error_types"] == {"parameter": {"n": 2, "share": 0.5}, "location": {"n": 1, "share": 0.25},
                                    "logic": {"n": 1, "share": 0.25}}  # fmt: skip
    assert kinds["types_above_floor"] == 3
    assert kinds["llm_made"] == 1  # the location mistake of "late": no `injected` in its step
    assert kinds["injected"] == {"parameter": {"n": 2, "share": 0.6667}, "logic": {"n": 1, "share": 0.3333}}


def test_one_kind_dominating_leaves_one_kind_above_the_floor(tmp_path):
    with Store.open(tmp_path) as store:
        for i in range(2):
            add_row(store, f"p{i}", ROWS["repeats"])
        kinds = row_quality(store)["mistake_kinds"]
    assert kinds["error_types"] == {"parameter": {"n": 4, "share": 1.0}} and kinds["types_above_floor"] == 1


def test_arcs(run_dir, tmp_path):
    arcs = figures(run_dir)["arcs"]
    assert arcs["by_position_and_types"]["distinct"] == 3 and arcs["by_position_and_types"]["share_distinct"] == 1.0
    assert {a["arc"] for a in arcs["by_position_and_types"]["top"]} == {"@2 parameter > parameter", "@2 logic",
                                                                         "@3 location"}  # fmt: skip
    # One arc shared: two rows make the varied row's mistake at turn 2, one at turn 1; one row has none.
    first = [ROWS["varied"][1], *ROWS["varied"][2:]]
    with Store.open(tmp_path / "shared") as store:
        for name, steps in {"a": ROWS["varied"], "b": ROWS["varied"], "c": first, "d": ROWS["late"][:2]}.items():
            add_row(store, name, steps)
        shared = row_quality(store)["arcs"]
    assert shared["by_position_and_types"] == {"distinct": 3, "share_distinct": 0.75, "top": [
        {"arc": "@2 logic", "rows": 2, "share": 0.5}, {"arc": "@1 logic", "rows": 1, "share": 0.25},
        {"arc": "no mistake", "rows": 1, "share": 0.25}]}  # fmt: skip
    assert shared["by_types"]["distinct"] == 2 and shared["by_types"]["top"][0] == {"arc": "logic", "rows": 3,
                                                                                     "share": 0.75}  # fmt: skip


def test_an_empty_store(tmp_path):
    with Store.open(tmp_path) as store:
        q = row_quality(store)
    assert q["rows"] == 0 and q["observations"]["top"] == [] and q["repeats"]["moves"]["turns"] == 0
    assert q["arcs"]["by_types"] == {"distinct": 0, "share_distinct": None, "top": []} and format_row_quality(q) == ""


def test_the_quality_command_and_the_report_show_them(run_dir, capsys):
    assert main(["quality", str(run_dir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["within_rows"]["repeats"]["injected"]["repeated"] == 1 and out["verified"] == 3
    assert main(["quality", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "same injected move 1/3 (33.3%) in 1/2 rows; same thought 1/13 (7.7%) in 1/3 rows" in text
    assert 'top skeleton "you pick up the <name>." 3 (30.0%, 3 rows)' in text
    assert "mistake kinds: parameter 2 (50.0%), location 1 (25.0%), logic 1 (25.0%); 3 above 10%" in text
    assert "arcs (first mistake @turn, error types): 3/3 distinct (100.0%)" in text
    html = write_report(run_dir).read_text()
    assert "Inside each refine row" in html and "you pick up the &lt;name&gt;." in html
    assert "@2 parameter &gt; parameter" in html
