"""The chosen side of a refine step pair says only what its prompt grounds (factory/export/pairs_thought.py).

Each rule on sentences written as a player writes a correction after a refusal: what goes, what stays.
"""

from __future__ import annotations

from preference_rows import tomato_script

from factory.export.pairs_thought import Judge, grounded_thought
from factory.refine.narration import opening_observation

PROMPT = "Task: Water the tomatoes in the garden. Observation: You are in the kitchen. You see the watering can."
LEFT_OUT = (
    "Thought: I will water the plants with the hose.\nAction: water(litres=2)\n"
    "Observation: You have no hose; the tap is dry and the plants are out of reach."
)


def kept(thought: str, judge: Judge | None = None) -> str | None:
    return grounded_thought(thought, PROMPT, LEFT_OUT, "take(item=watering_can)", judge)


def test_a_sentence_that_reacts_goes_and_one_that_plans_stays():
    assert kept("Of course, I should check first. I will take the watering can.") == "I will take the watering can."
    assert kept("I forgot the can. I will take the watering can.") == "I will take the watering can."
    assert kept("That is not possible here. I will take the watering can.") == "I will take the watering can."
    assert kept("To the kitchen then.") is None  # a trailing "then" answers what was just said


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


def test_an_assertion_the_world_and_the_prompt_do_not_support_goes():
    script = tomato_script("p")
    opening = {"role": "user", "content": f"Task: {script.task}\nObservation: {opening_observation(script)}"}
    step = {"thought": "", "action": {"name": "take", "params": {"item": "watering_can"}}, "observation": "",
            "evaluation": {"error": "none", "task_done": False}}  # fmt: skip
    judge = Judge(script, [opening], [], step)
    thought = "The tomatoes are watered. I will take the watering can."
    assert kept(thought) == thought  # no word of it is a reaction or from the left-out turns
    assert kept(thought, judge) == "I will take the watering can."  # but the world says they are not watered
