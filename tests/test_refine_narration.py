"""The world-judged DM speaks in prose (issue 26): display names, no fact ids, only what changed, varied wording.

The procedural worlds (what `factory refine` builds on the embedded model) are played through the world and
the scaffold directly, no LLM: the world's plan with mistakes injected, and every call the player could make
in every state along the plan. The state stays exact: every row still verifies.
"""

import random
import re
from collections import Counter

import pytest
from test_refine_world import GARDEN

from factory.personas import load_library
from factory.refine.config import RefineConfig
from factory.refine.narration import display, opening_observation
from factory.refine.procedural import build_script
from factory.refine.prose import fact_clause, fact_refusal, narrate_success
from factory.refine.scaffold import planned_steps, with_mistakes
from factory.refine.script import Script
from factory.refine.values import valid_typed
from factory.refine.verify import verify_steps
from factory.refine.world import WorldState, check_action, step

SETTINGS = RefineConfig(with_code=False, trajectories="scaffolded", seed=1, mistake_counts={2: 1, 3: 1})
SNAKE = re.compile(r"\b[a-z]+_[a-z_]+\b")


def procedural_rows(count: int = 120):
    """(script, steps) for library personas: the world's plan with 3 mistakes injected, as the scaffold plays it."""
    for persona in load_library()[:count]:
        script = build_script(persona.id, persona.text)
        yield script, with_mistakes(script, planned_steps(script), 3, SETTINGS, random.Random(persona.id))


def every_call(script: Script):
    """Every action with every valid value, and a few the world does not know."""
    calls = [("look_around", {}), ("go", {"target": "moon"})]
    for action in script.actions:
        values = [valid_typed(p) for p in action.parameters]
        calls += [(action.name, {action.parameters[0].name: v}) for v in values[0]] if values else [(action.name, {})]
    return calls


def test_no_fact_id_or_snake_case_name_in_any_observation_of_a_procedural_world():
    seen = 0
    for script, steps in procedural_rows():
        facts = script.fact_names()
        told = [opening_observation(script)] + [s["observation"] for s in steps]
        state = WorldState.initial(script)
        for planned in steps:  # every call the player could make, in every state the plan passes through
            told += [check_action(script, state, name, params).reason for name, params in every_call(script)]
            moved = step(script, state, planned["action"]["name"], planned["action"]["params"])
            state = moved.after if moved.check.ok else state
        for text in filter(None, told):
            seen += 1
            assert not SNAKE.search(text) and '"' not in text and "worked." not in text, text
            assert not any(f in text or display(f) in text for f in facts), text  # "engine inspected": an id
    assert seen > 2000


def test_a_refused_action_names_what_is_missing_in_words():
    script = build_script("p1", "An auto mechanic in Mumbai, 43 years old, whose work means diagnosing engine faults.")
    (site,) = {r.value for a in script.actions for r in a.preconditions if r.kind == "player_at"}
    last = script.action(planned_steps(script)[-1]["action"]["name"])
    (needed,) = [r.value for r in last.preconditions if r.kind == "fact_true"]  # e.g. engine_inspected
    thing, participle = display(needed).rsplit(" ", 1)
    state = WorldState(site, list(script.environment.player.inventory) + [script.environment.locations[0].items[0]])
    refused = check_action(script, state, last.name, {})
    assert not refused.ok and refused.error_type == "logic"
    assert f"the {thing} has not been {participle}" in refused.reason.lower(), refused.reason


@pytest.mark.parametrize(
    ("fact", "how", "clause"),
    [
        ("vitals_checked", "missing", "the vitals have not been checked"),
        ("panel_unpacked", "missing", "the panel has not been unpacked"),
        ("donations_set_out", "missing", "the donations have not been set out"),
        ("beacon_lit", "present", "the beacon has already been lit"),
        ("tap_open", "missing", "the tap is not open"),
        ("tap_open", "cleared", "the tap is no longer open"),
        ("twins_napping", "set", "the twins are now napping"),
        ("weekly_report_submitted", "set", "the weekly report is now submitted"),
        ("moved_in", "missing", None),  # no subject: said through the action that sets it
        ("has_permit", "missing", None),
    ],
)
def test_a_fact_s_name_becomes_a_clause(fact, how, clause):
    assert fact_clause(fact, how) == clause


def test_a_fact_whose_name_is_no_clause_is_refused_through_the_action_that_sets_it():
    data = {**GARDEN, "actions": [*GARDEN["actions"], {"name": "get_permit", "description": "Ask for a permit.",
                                                       "effects": [{"kind": "set_fact", "value": "has_permit"}]}]}  # fmt: skip
    told = fact_refusal(Script.model_validate(data), "has_permit", True)
    assert "get permit" in told and "has permit" not in told and "_" not in told


def test_a_success_after_the_first_says_what_changed_not_the_room_again():
    arrivals = 0
    for script, steps in procedural_rows(60):
        state = WorldState.initial(script)
        for planned in steps:
            moved = step(script, state, planned["action"]["name"], planned["action"]["params"])
            if moved.check.ok:
                room = script.location(moved.after.location).description
                arrived = moved.after.location != state.location
                assert (room in planned["observation"]) == arrived, planned["observation"]
                assert "You are in" not in planned["observation"] and "You are carrying" not in planned["observation"]
                arrivals += arrived
                state = moved.after
    assert arrivals >= 60


def test_a_success_says_what_the_player_now_holds_and_what_became_true():
    script = Script.model_validate(GARDEN)
    start = WorldState.initial(script)
    holding = step(script, start, "take", {"item": "watering_can"}).after
    assert "the watering can" in narrate_success(script, start, holding, "take", {"item": "watering_can"})
    garden = step(script, holding, "go", {"place": "garden"}).after
    watered = step(script, garden, "water", {"litres": 2}).after
    told = narrate_success(script, garden, watered, "water", {"litres": 2}, done=True)
    assert "the tomatoes are now watered" in told.lower() and "garden" not in told  # not the room again


def test_rows_do_not_share_one_observation_skeleton():
    skeletons = []
    for script, steps in procedural_rows():
        names = {n for loc in script.environment.locations for n in [loc.name, *loc.items]}
        names |= set(script.environment.player.inventory)
        for s in steps:
            text = s["observation"]
            for loc in script.environment.locations:
                text = text.replace(loc.description, "D") if loc.description else text
            for name in sorted(names, key=len, reverse=True):
                text = text.replace(display(name), "X")
            skeletons.append(text)
    (_, top), *_ = Counter(skeletons).most_common(1)
    assert top / len(skeletons) < 0.12  # one fixed phrasing per event puts the most frequent at about a fifth


def test_the_exact_state_still_verifies():
    for script, steps in procedural_rows(40):
        verdict = verify_steps(script, [{**s, "thought": "I act."} for s in steps], min_corrections=2)
        assert verdict.ok, verdict.reason
