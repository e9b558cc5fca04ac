"""The world in words: what the player reads and what the DM judges by.

Identifiers become display names (`med_bay` -> "the med bay"); what the player
reads is in the second person and the DM's voice ("You need the station map,
but you are not carrying it."); the DM's rules are the script's preconditions,
effects and goal in plain words. The wording lives in
`prompts/refine/narration.json`. Only the DM's rules name the facts as written
in the script: the player learns about the world from observations alone.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ..paths import prompts_dir
from .script import Action, Effect, Precondition, ScriptDraft


@lru_cache(maxsize=1)
def words() -> dict[str, Any]:
    return json.loads((prompts_dir() / "refine" / "narration.json").read_text())


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


def refusal(kind: str, **values: Any) -> str:
    """What the DM tells the player when the world refuses an action."""
    return words()["refusals"][kind].format(**values)


def describe_state(script: ScriptDraft, location: str, inventory: list[str], items_here: list[str]) -> str:
    """Where the player is, what it sees and what it carries, in the second person."""
    here = script.location(location)
    text = words()["state"].format(
        place=the(location), description=here.description if here else "",
        items=listing(items_here, words()["nothing_here"]), held=listing(inventory, words()["nothing_held"]),
    )  # fmt: skip
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
    return f"the task is done at the step after which {conditions}" if conditions else "the DM judges when the task is done"
