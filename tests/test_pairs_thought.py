"""The chosen side of a refine step pair says only what its prompt grounds (factory/export/pairs_thought.py).

Each rule on sentences written as a player writes a correction after a refusal: what goes, what stays.
"""

from __future__ import annotations

import json

from preference_rows import step

from factory.export.pairs_thought import grounded_thought
from factory.prompts import prompt_file
from factory.refine.grounded_thoughts import check_thoughts
from factory.refine.narration import opening_observation
from factory.refine.script import Script

PROMPT = "Task: Water the tomatoes in the garden. Observation: You are in the kitchen. You see the watering can."
LEFT_OUT = (
    "Thought: I will water the plants with the hose.\nAction: water(litres=2)\n"
    "Observation: You have no hose; the tap is dry and the plants are out of reach."
)


def kept(thought: str) -> str | None:
    return grounded_thought(thought, PROMPT, LEFT_OUT, "take(item=watering_can)")


def test_a_sentence_that_reacts_goes_and_one_that_plans_stays():
    assert kept("Of course, I should check first. I will take the watering can.") == "I will take the watering can."
    assert kept("I forgot the can. I will take the watering can.") == "I will take the watering can."
    assert kept("That is not possible here. I will take the watering can.") == "I will take the watering can."
    assert kept("To the kitchen then.") is None  # a trailing "then" answers what was just said


def test_hindsight_on_the_players_own_attempt_goes():
    """The attempt a correction looks back on ("what I meant to give") is the rejected side, not in the prompt.
    None of these has a word of realisation, a word of the left-out turns or a pronoun: hindsight is its own
    sign (a strong model's "Three is closest to what I meant to give" in the recorded set was one)."""
    plan = "I will take the watering can."
    for hindsight in ("Two litres is closest to what I meant to pour.", "I'd meant to water the tomatoes first.",
                      "My first plan was quicker.", "I tried to save a trip to the kitchen.",
                      "I was going to water the tomatoes right away."):  # fmt: skip
        assert kept(f"{hindsight} {plan}") == plan, hindsight
    # Intent now, not looked back on, is a plan: it stays.
    for intent in ("I want the tomatoes watered before noon.", "I think the tomatoes need water soon."):
        assert kept(f"{intent} {plan}") == f"{intent} {plan}", intent


def test_a_sentence_naming_what_only_the_left_out_turns_said_goes():
    # "hose" and "tap" come from the mistake and the refusal, which the pair's prompt does not hold.
    assert kept("A tap would be easier. I will take the watering can.") == "I will take the watering can."
    assert kept("The watering can will do for the tomatoes.") == "The watering can will do for the tomatoes."


def test_a_sentence_pointing_back_to_one_that_went_goes_too():
    assert kept("I forgot the watering can. Let me take it.") is None
    assert kept("I forgot the watering can. The tomatoes need it in the garden.") is None
    assert kept("I forgot the watering can. These tomatoes need water.") == "These tomatoes need water."
    assert kept("I'll carry them to the garden.") is None  # a first sentence points back to the refusal


def test_an_acronym_is_not_a_pronoun():
    assert kept("I will ask IT for the watering can.") == "I will ask IT for the watering can."


def test_a_claim_the_world_contradicts_is_the_rows_own_fault_and_its_filters():
    """Why the pair rules do not run the grounded-thought check: a correction that mistakes the room it stands
    in is wrong in the trajectory's SFT rows too. The pair rules keep the sentence (nothing in it answers the
    refusal); the refine path's own check, which it records on the row and the `grounded_thoughts` filter
    reads, flags it with the refusal in view, so the filter drops the row and its pairs from every export."""
    example = json.loads(prompt_file("refine/script_examples.json").read_text())[1]  # the library's returns
    script = Script.model_validate({**example, "persona_id": "p"})
    steps = [
        step("The returned book is right here, so I will pick it up.", "pick_up", {"item": "returned_book"},
             "You pick up the returned book."),
        step("Now to the stacks with it.", "walk", {"area": "stacks"}, "You are in the stacks. Tall shelves."),
        step("Shelf 12 is where this subject goes.", "shelve", {"book": "returned_book", "shelf": 12},
             "The return has not been logged yet: returns are logged at the front desk first.", "logic"),
        step("I'm in the reading room, so I will walk to the front desk and log the return.", "walk",
             {"area": "front_desk"}, "You are at the front desk."),
    ]  # fmt: skip
    turns = [{"role": "user", "content": f"Task: {script.task}\nObservation: {opening_observation(script)}"}]
    for done in steps:
        action = f"{done['action']['name']}({', '.join(f'{k}={v}' for k, v in done['action']['params'].items())})"
        turns += [{"role": "assistant", "content": f"Thought: {done['thought']}\nAction: {action}",
                   "loss": done["evaluation"]["error"] == "none"},
                  {"role": "user", "content": f"Observation: {done['observation']}"}]  # fmt: skip
    text = lambda part: "\n".join(turn["content"] for turn in part)  # noqa: E731
    correction = steps[3]["thought"]
    assert grounded_thought(correction, text(turns[:5]), text(turns[5:7]), "walk(area=front_desk)") == correction
    found = check_thoughts(script, turns, steps)
    assert [(f.turn, f.claim) for f in found.ungrounded] == [(4, "i'm in the reading room")]
