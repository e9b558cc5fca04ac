"""Error injection: corrupt a player action so a correction is guaranteed.

The corrupted step's DM evaluation comes from the world model, not the LLM, so
it is right by construction; the LLM then continues from the DM's observation
and must correct the mistake. Kinds, as in AgentRefine's error types: a wrong
parameter value, an action invalid where the player stands, an unknown action.
The injected turns are mistakes, so they never train (loss=false).
"""

from __future__ import annotations

import random
from typing import Any

from .grounding import dm_feedback, feedback_templates
from .script import Script
from .world import ActionCheck, WorldState, check_action, format_action, step

UNKNOWN_ACTIONS = ("look_around", "ask_for_help", "use_map", "wait", "search")


def _valid_params(script: Script, name: str, rng: random.Random) -> dict[str, Any]:
    return {p.name: rng.choice(p.valid_values) for p in script.action(name).parameters}


def _wrong_value(script: Script, state: WorldState, rng: random.Random):
    candidates = [a for a in script.actions if a.parameters]
    if not candidates:
        return None
    action = rng.choice(candidates)
    params = _valid_params(script, action.name, rng)
    target = rng.choice(action.parameters)
    pool = sorted({v for a in script.actions for p in a.parameters for v in p.valid_values} - set(target.valid_values))
    params[target.name] = rng.choice(pool) if pool else f"no_such_{target.name}"
    return action.name, params


def _wrong_place(script: Script, state: WorldState, rng: random.Random):
    for action in rng.sample(script.actions, len(script.actions)):
        params = _valid_params(script, action.name, rng)
        checked = check_action(script, state, action.name, params)
        if not checked.ok and checked.error_type == "location":
            return action.name, params
    return None


def _unknown_action(script: Script, state: WorldState, rng: random.Random):
    names = [n for n in UNKNOWN_ACTIONS if script.action(n) is None]
    return (rng.choice(names), {}) if names else None


CORRUPTIONS = {"parameter": _wrong_value, "location": _wrong_place, "unknown_action": _unknown_action}


def injected_step(script: Script, state: WorldState, rng: random.Random) -> dict[str, Any] | None:
    """A mistaken step with the DM's correct evaluation, or None if no corruption applies."""
    for kind in rng.sample(list(CORRUPTIONS), len(CORRUPTIONS)):
        picked = CORRUPTIONS[kind](script, state, rng)
        if picked is None:
            continue
        name, params = picked
        checked: ActionCheck = step(script, state, name, params).check
        if checked.ok:  # e.g. the "wrong" value happened to be valid: try another kind
            continue
        call = format_action(name, params)
        return {
            "thought": feedback_templates()["thought"].format(action=call), "action": {"name": name, "params": params},
            **dm_feedback(script, state, call, checked),
            "evaluation": {"error": checked.error_type, "task_done": False}, "injected": kind,
        }  # fmt: skip
    return None
