"""A thought that names its move names the action it makes (issue 28, refine/thought_actions.py): the clash is
found in a sentence, a plan, a past move or the future of another verb is not; a scaffolded run re-asks once
and then drops the clashing sentence, so a kept row never holds one; a played row that does is dropped by the
`grounded_thoughts` filter, the clash as its reason."""

from __future__ import annotations

import json

import pytest
from loopback_server import ok
from test_refine_grounded_thoughts import WARD, turns_and_steps
from test_refine_scaffold import SCAFFOLDED, SCRIPT_MARK, run_one
from test_refine_world import GARDEN

from factory.filters import parse_filters, run_filters
from factory.records import Trajectory
from factory.refine.grounded_thoughts import check_thoughts
from factory.refine.schemas import SCAFFOLD_KEYS
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.refine.thought_actions import clashes, step_clashes
from factory.store import Store

KEY, STORE = {"name": "take", "params": {"item": "drug_key"}}, {"name": "go", "params": {"place": "storeroom"}}
VITALS = {"name": "check_vitals", "params": {"arm": "left"}}


@pytest.mark.parametrize(
    "thought, action, named",
    [
        ("I am going to take the patient chart.", KEY, ["patient chart"]),
        ("I will go to the ward. Then the key.", STORE, ["ward"]),
        ("Let me check the vitals on the right arm.", VITALS, ["right"]),
        ("I am going to take the drug key.", KEY, []),
        ("Taking the key now.", KEY, []),  # the head noun of drug_key
        ("I'll take it.", KEY, []),  # names nothing: no claim
        ("I took the patient chart earlier. Now I take the key.", KEY, []),  # a past move is another form
        ("After taking the chart, I'll take the key.", KEY, []),  # a plan naming this call too
        ("Instead of taking the chart, I'll grab the key.", KEY, []),  # put aside
        # "going to" + a verb is the future, not `go`: the thought announces taking the chart, not this move
        ("I'm going to take the chart in the ward.", STORE, ["patient chart"]),
        # another action of the script announced as the move, the call's own value never named
        ("I am going to the storeroom.", KEY, ["storeroom"]),
        ("Let me check the vitals on the right arm.", KEY, ["right"]),
        ("I will go to the storeroom for the drug key.", KEY, []),  # names the call's value: this move
        ("After going to the storeroom, I can look around.", KEY, []),  # a move before this one
        ("I went to the storeroom. The shelves are tall.", KEY, []),  # a past move
        ("No need to go to the ward again.", KEY, []),  # put aside
    ],
)
def test_a_thought_naming_its_verb_with_another_thing_clashes(thought, action, named):
    found = clashes(WARD, thought, action)
    assert [c.named for c in found] == ([named] if named else [])
    if named:
        assert found[0].sentence == thought.split(". ")[0].rstrip(".") + "." and found[0].call in found[0].text()


# A played row (the paper's loop): the second thought says one thing and the action does another.
CLASHING = [
    ("I'll check the vitals first.", ("check_vitals", {"arm": "left"}), "check_vitals(arm=left) worked."),
    ("I am going to take the patient chart.", ("take", {"item": "drug_key"}), "You pick up the drug key."),
]
AGREEING = [CLASHING[0], ("I am going to take the drug key.", ("take", {"item": "drug_key"}), "You pick up it.")]
FIRST = "'I am going to take the patient chart.' (turn 2): names patient chart; the action is take(item=drug_key)"


def test_the_row_check_counts_a_clash_as_an_ungrounded_thought():
    for rows, found in ((CLASHING, [FIRST]), (AGREEING, [])):
        turns, steps = turns_and_steps(rows)
        result = check_thoughts(WARD, [t.model_dump() for t in turns], steps)
        assert [f.text() for f in result.clashes] == found and result.ungrounded == []
        assert result.ungrounded_thoughts == len(found) and result.stats()["ungrounded_thought"] == (found or [None])[0]


def test_the_filter_drops_the_clashing_row_with_its_reason(tmp_path):
    with Store.open(tmp_path) as store:
        for name, rows in (("clashing", CLASHING), ("agreeing", AGREEING)):
            save_script(store, f"{name}:0", name, 0, WARD, [])
            turns, stored = turns_and_steps(rows)
            row = {"trajectory_id": f"refine:{name}", "source": "refine", "persona_id": name,
                   "script_id": f"{name}:0", "verified": True, "steps": json.dumps(stored)}  # fmt: skip
            save_trajectory(store, row, Trajectory(id=row["trajectory_id"], source="refine", turns=turns))
    spec = {"name": "grounded_thoughts", "kind": "grounded_thoughts"}
    assert run_filters(tmp_path, config=parse_filters([spec], "test.yaml")) is not None
    with Store.open(tmp_path, read_only=True) as store:
        verdicts = dict(
            (t, (k, r)) for t, k, r in store.query("SELECT trajectory_id, keep, reason FROM filter_verdicts")
        )
    assert verdicts == {
        "refine:clashing": (False, f"ungrounded thoughts: 1 ({FIRST})"),
        "refine:agreeing": (True, None),
    }


def scaffold_model(clashing_replies: int, whole: tuple[int, ...] = ()):
    """A model under the scaffold's schema: its first `clashing_replies` replies say every `go` goes to the other
    place ("I will go to the kitchen." over go(place=garden)) before a sentence of their own; later ones agree.
    The replies numbered in `whole` (0-based) say only the clashing sentence at every step after the first."""
    replies = []

    def write(body):
        items = body["response_format"]["json_schema"]["schema"]["properties"]["steps"]["prefixItems"]
        steps = []
        for n, item in enumerate(items, start=1):
            call = item["properties"][SCAFFOLD_KEYS["action"]]["const"]
            thought = f"I see that step {n} moves the plan on."  # the schema: "I ...", 20 to 150 characters
            if call.startswith("go(") and len(replies) < clashing_replies:  # the fixed call, as written
                other = "kitchen" if call == "go(place=garden)" else "garden"
                thought = f"I will go to the {other}." + ("" if len(replies) in whole and n > 1 else f" {thought}")
            steps.append({SCAFFOLD_KEYS["action"]: call, SCAFFOLD_KEYS["thought"]: thought,
                          SCAFFOLD_KEYS["observation"]: item["properties"][SCAFFOLD_KEYS["observation"]]["const"]})  # fmt: skip
        replies.append(steps)
        return json.dumps({"steps": steps})

    return write


def scaffolded_row(server, fast_config, tmp_path, clashing_replies, whole=()):
    server.content = scaffold_model(clashing_replies, whole)
    server.route(SCRIPT_MARK, ok(GARDEN))
    store = Store(tmp_path / "r.sqlite")
    assert run_one(fast_config(), store, SCAFFOLDED)
    verdicts = store.query("SELECT attempt, ok, rule, reason FROM verdicts ORDER BY attempt")
    steps, stats = store.query("SELECT steps, stats FROM trajectories")[0]
    return json.loads(steps), json.loads(stats), verdicts, len(server.requests)


def test_a_scaffolded_clash_is_asked_again_once(server, fast_config, tmp_path):
    steps, stats, verdicts, sent = scaffolded_row(server, fast_config, tmp_path, clashing_replies=1)
    assert sent == 3  # the script, the clashing thoughts, the thoughts asked again
    (first, rule, reason), second = verdicts[0][1:], verdicts[1][1:3]
    assert (first, rule, second) == (False, "thought_action", (True, None))
    assert (
        reason.startswith("step ")
        and "'I will go to the kitchen.' names kitchen; the action is go(place=garden)" in reason
    )
    assert all(s["thought"].startswith("I see that step ") and "dropped_thought" not in s for s in steps)
    assert "thought_sentences_dropped" not in stats["provenance"] and stats["ungrounded_thoughts"] == 0


def test_a_clash_asked_again_is_dropped_and_counted_and_never_kept(server, fast_config, tmp_path):
    steps, stats, verdicts, sent = scaffolded_row(server, fast_config, tmp_path, clashing_replies=2)
    assert sent == 3 and [v[2] for v in verdicts] == ["thought_action", None]  # asked again once, not twice
    dropped = [s for s in steps if "dropped_thought" in s]
    assert dropped and all(s["action"]["name"] == "go" and s["thought"].startswith("I see that step ") for s in dropped)
    assert all(d.startswith("I will go to the ") for s in dropped for d in s["dropped_thought"])
    assert stats["provenance"]["thought_sentences_dropped"] == len(dropped)
    assert step_clashes(Script.model_validate(GARDEN), steps) == [] and stats["ungrounded_thoughts"] == 0


def test_a_thought_asked_again_that_is_only_a_clash_falls_back_to_the_first_answer(server, fast_config, tmp_path):
    # The second reply is nothing but clashes after its first step: each step keeps the first reply's thought
    # less its clashing sentence, so one re-ask never costs the attempt (a persona's budget may be 3 calls).
    steps, stats, verdicts, sent = scaffolded_row(server, fast_config, tmp_path, clashing_replies=2, whole=(1,))
    assert sent == 3 and [v[2] for v in verdicts] == ["thought_action", None]
    dropped = [s for s in steps if "dropped_thought" in s]
    assert dropped and all(s["thought"].startswith("I see that step ") for s in steps)
    assert step_clashes(Script.model_validate(GARDEN), steps) == [] and stats["ungrounded_thoughts"] == 0
