"""The world in words: what the player reads and what the DM judges by.

Identifiers become display names (`med_bay` -> "the med bay"); what the player
reads is in the second person and the DM's voice ("You need the station map,
but you are not carrying it."); the DM's rules are the script's preconditions,
effects and goal in plain words. Only the DM's rules name the facts as
written in the script: the player learns about the world from observations
alone. The wording is the `WORDS` table below (the world's own sentences, not
an LLM prompt); a refusal has a few phrasings, one picked by a stable hash of
the event and the state (`pick`). What the DM says after an accepted action,
and a missing fact in words, are in prose.py. `state` is the whole scene: the
opening observation, and the eval loop's narration (factory/envs/text_game.py).
"""

from __future__ import annotations

import zlib
from typing import Any

from .script import Action, Effect, Precondition, ScriptDraft

WORDS: dict[str, Any] = {
    # Each refusal has a few phrasings; `refusal` picks one by a seeded choice (`pick`), so rows do not
    # share one skeleton. Facts are refused in prose.py, in words made from the fact's name.
    "refusals": {
        "unknown_action": [
            "You cannot {action} here: it is not one of the actions you can take.",
            "There is no way to {action} here; choose one of the actions you have.",
            "{action} is not something you can do here.",
        ],
        "missing_param": [
            "To {action} you need to say which {param}.",
            "{action} what? Say which {param}.",
            "You have to name the {param} to {action}.",
        ],
        "unexpected_param": [
            "{action} takes no {param}.",
            "There is no {param} to choose when you {action}.",
            "You cannot say a {param} when you {action}.",
        ],
        "invalid_value": [
            "That will not work: the {param} cannot be {value}.",
            "You cannot use {value} as the {param} here.",
            "The {param} cannot be {value}; pick another.",
        ],
        "player_at": [
            "You can only do that in {place}, and you are in {here}.",
            "That has to be done in {place}; you are in {here}.",
            "Not here: you would need to be in {place}, and this is {here}.",
        ],
        "has_item": [
            "You need {item}, but you are not carrying it.",
            "You don't have {item} with you.",
            "Without {item} you can't do that, and you are not carrying it.",
        ],
        "param_at_location": [
            "You do not see {item} here in {here}.",
            "{item} is not here in {here}.",
            "You look around {here}, but {item} is not there.",
        ],
        "already_held": [
            "You are already carrying {item}.",
            "{item} is already in your hands.",
            "You have {item} with you already.",
        ],
        "param_in_inventory": [
            "You are not carrying {item}.",
            "You don't have {item} with you.",
            "{item} is not among the things you carry.",
        ],
        "code": ["That does not work here; try something else."],
    },
    "state": "You are in {place}. {description} You see {items}. You are carrying {held}.",
    "nothing_here": "nothing of note",
    "nothing_held": "nothing",
    "rules": {
        "player_at": "the player is in {value}",
        "has_item": "the player carries {value}",
        "param_at_location": "the item given as '{param}' is where the player stands",
        "param_in_inventory": "the player carries the item given as '{param}'",
        "fact_true": "'{fact}' is true",
        "fact_false": "'{fact}' is false",
        "move_to": "the player moves to the place given as '{param}'",
        "take": "the item given as '{param}' goes into the player's inventory",
        "drop": "the item given as '{param}' is left where the player stands",
        "set_fact": "'{fact}' becomes true",
        "clear_fact": "'{fact}' becomes false",
    },
    "dm_rejects": "The player tries {action}, which the rules refuse ({rule}). I tell the player: {reason}",
    "dm_rejects_open": "The player tries {action}, which the rules refuse: {rule}.",
    "accepted": "{action} worked. {state}",
    "always": "always allowed",
    "allowed": "allowed when {conditions}",
    "unchanged": "nothing changes",
}


def words() -> dict[str, Any]:
    return WORDS


def display(name: Any) -> str:
    """An identifier as a person writes it: `med_bay` -> "med bay"."""
    return " ".join(str(name).replace("_", " ").split())


def the(name: Any) -> str:
    """A display name with its article; names written with a capital (places, people) take none."""
    text = display(name)
    return f"the {text}" if text[:1].islower() else text


def listing(names: list[Any], empty: str) -> str:
    shown = [the(n) for n in names]
    if not shown:
        return empty
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def pick(options: list[str], *key: Any) -> str:
    """One of the phrasings, chosen by a stable hash of `key`: the same event in the same state reads the
    same on every replay (the verifier's, a rerun's), while other rows and other states get other wording."""
    return options[zlib.crc32("|".join(map(str, key)).encode()) % len(options)]


def sentence(text: str) -> str:
    """Capitalised, single-spaced: a name or empty part at the start leaves neither a small letter nor a gap."""
    text = " ".join(text.split())
    return text[:1].upper() + text[1:]


def refusal(kind: str, key: Any = "", **values: Any) -> str:
    """What the DM tells the player when the world refuses an action, as a sentence (`key` varies the wording)."""
    return sentence(pick(words()["refusals"][kind], kind, key, *sorted(values.items())).format(**values))


def describe_state(script: ScriptDraft, location: str, inventory: list[str], items_here: list[str]) -> str:
    """Where the player is, what it sees and what it carries, in the second person."""
    here = script.location(location)
    text = words()["state"].format(
        place=the(location),
        description=here.description if here else "",
        items=listing(items_here, words()["nothing_here"]),
        held=listing(inventory, words()["nothing_held"]),
    )
    return " ".join(text.split())  # an empty description leaves a double space


def opening_observation(script: ScriptDraft) -> str:
    env = script.environment
    here = script.location(env.player.location)
    return describe_state(script, env.player.location, list(env.player.inventory), list(here.items) if here else [])


def rule_words(rule: Precondition | Effect) -> str:
    """One precondition, effect or goal condition in plain words."""
    return words()["rules"][rule.kind].format(value=the(rule.value), fact=rule.value, param=rule.value)


def describe_rules(action: Action) -> str:
    """When an action is allowed and what it changes, for the DM."""
    params = ", ".join(p.name for p in action.parameters)
    conditions = " and ".join(rule_words(r) for r in action.preconditions)
    allowed = words()["allowed"].format(conditions=conditions) if conditions else words()["always"]
    changes = "; ".join(rule_words(e) for e in action.effects) or words()["unchanged"]
    return f"- {action.name}({params}): {allowed}; then {changes}."


def describe_goal(script: ScriptDraft) -> str:
    conditions = " and ".join(rule_words(c) for c in script.goal.conditions)
    return (
        f"the task is done at the step after which {conditions}"
        if conditions
        else "the DM judges when the task is done"
    )
