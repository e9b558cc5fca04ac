"""Error injection: mistakes placed inside a verified trajectory, so corrections are guaranteed.

The LLM plays first. When its verified steps hold fewer corrected mistakes than
the row aims for (a count drawn from `RefineConfig.mistake_counts`), mistakes
are inserted at positions drawn over the verified prefix (`first_move_mistakes`
decides how often the first move is one): the prefix is cut after the last one,
and the LLM continues from the DM's observation of it. An earlier injection
keeps the verified step after it, which becomes its correction.

A mistake's error type is drawn from `RefineConfig.error_mix`, as in
AgentRefine's error types: a wrong parameter value, an action not possible where
the player stands (location), one the rules refuse for another reason (logic),
or an action that does not exist. Its DM evaluation comes from the world's step
function, not an LLM, so it is right by construction; it never trains
(loss=false) because it is a mistake. Its thought, and the thought of a kept step
that now follows it, are left open (`open_thought`): the continuation call writes
them in the trajectory's own voice (roles.py), so no template is ever used.
"""

from __future__ import annotations

import random
from typing import Any

from .grounding import dm_feedback, state_after
from .script import Parameter, Script
from .values import valid_typed
from .world import WorldState, check_action, format_action, step

KINDS = ("parameter", "location", "logic", "unknown_action")
UNKNOWN_ACTIONS = ("look_around", "ask_for_help", "use_map", "wait", "search", "check_notes", "call_out")
MAX_TRIES = 40  # random calls tried per kind before it counts as impossible in this state


def _random_call(script: Script, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Any action with valid values of their declared types (the player sends 15, not "15")."""
    action = rng.choice(script.actions)
    return action.name, {p.name: rng.choice(valid_typed(p)) for p in action.parameters if valid_typed(p)}


def _confusions(script: Script, target: Parameter) -> list[Any]:
    """Wrong values a player could mistake for the right one: a number past the valid ones; another place
    of the world for a place, another thing of the world for a thing (never a value of another kind,
    such as a number for a destination)."""
    if target.type in ("integer", "number"):
        numbers = [v for v in valid_typed(target) if isinstance(v, (int, float))]
        return [int(max(numbers, default=0)) + k for k in range(1, 10)]
    if target.type == "boolean":
        return []
    valid = set(target.valid_values)
    places = {loc.name for loc in script.environment.locations}
    things = {i for loc in script.environment.locations for i in loc.items} | set(script.environment.player.inventory)
    kind = places if valid & places else things if valid & things else set()
    return sorted(kind - valid)


def _wrong_value(script: Script, state: WorldState, rng: random.Random):
    candidates = [(a, p) for a in script.actions for p in a.parameters if _confusions(script, p)]
    if not candidates:
        return None
    action, target = rng.choice(candidates)
    params = {p.name: rng.choice(valid_typed(p)) for p in action.parameters if valid_typed(p)}
    params[target.name] = rng.choice(_confusions(script, target))
    return action.name, params


def _refused_as(error_type: str):
    """A call with valid values that the rules refuse in this state with `error_type`."""

    def pick(script: Script, state: WorldState, rng: random.Random):
        for _ in range(MAX_TRIES):
            name, params = _random_call(script, rng)
            checked = check_action(script, state, name, params)
            if not checked.ok and checked.error_type == error_type:
                return name, params
        return None

    return pick


def _unknown_action(script: Script, state: WorldState, rng: random.Random):
    names = [n for n in UNKNOWN_ACTIONS if script.action(n) is None]
    return (rng.choice(names), {}) if names else None


CORRUPTIONS = {"parameter": _wrong_value, "location": _refused_as("location"), "logic": _refused_as("logic"),
               "unknown_action": _unknown_action}  # fmt: skip


def weighted_order(weights: dict[str, float], rng: random.Random) -> list[str]:
    """The keys in a random order where heavier ones tend to come first; zero weights left out."""
    keyed = [(rng.random() ** (1.0 / w), k) for k, w in weights.items() if w > 0]
    return [k for _, k in sorted(keyed, reverse=True)]


def injected_step(
    script: Script, state: WorldState, rng: random.Random, mix: dict[str, float] | None = None
) -> dict[str, Any] | None:
    """A mistaken step with the DM's correct evaluation and an open thought; None if no kind applies.
    The kind is drawn from `mix` (equal weights by default); a kind impossible here yields to the next."""
    for kind in weighted_order(mix or dict.fromkeys(KINDS, 1.0), rng):
        picked = CORRUPTIONS[kind](script, state, rng)
        if picked is None:
            continue
        name, params = picked
        checked = step(script, state, name, params).check
        if checked.ok:  # e.g. the "wrong" value happened to be valid: try another kind
            continue
        return {
            "thought": "",
            "action": {"name": name, "params": params},
            **dm_feedback(script, state, format_action(name, params), checked),
            "evaluation": {"error": checked.error_type, "task_done": False},
            "injected": kind,
            "open_thought": "mistake",
        }
    return None


# --- where the mistakes go -----------------------------------------------------------------------------------


def is_mistake(step_: dict) -> bool:
    return step_["evaluation"]["error"] != "none"


def draw_target(counts: dict[int, float], min_corrections: int, rng: random.Random) -> int:
    """How many corrected mistakes a row aims for: drawn from the weights, never below the verifier's minimum."""
    drawn = weighted_order({str(k): w for k, w in counts.items()}, rng)
    return max(min_corrections, int(drawn[0]) if drawn else min_corrections)


def corrections_before(steps: list[dict], end: int) -> int:
    """Mistakes within steps[:end] followed by a valid step (verify.count_corrections on raw steps)."""
    kept = steps[:end]
    return sum(1 for a, b in zip(kept, kept[1:]) if is_mistake(a) and not is_mistake(b))


def eligible_positions(steps: list[dict]) -> list[int]:
    """Where a mistake may go: after a valid step (or first), before a valid step (or at the open end),
    and never after the step that completes the task."""
    n = len(steps)
    last = n - 1 if steps and steps[-1]["evaluation"]["task_done"] else n
    return [
        p for p in range(last + 1) if (p == 0 or not is_mistake(steps[p - 1])) and (p == n or not is_mistake(steps[p]))
    ]


def candidate_positions(steps: list[dict], first_move_share: float, rng: random.Random) -> list[int]:
    """Eligible positions in the order they are tried: the first move first with probability
    `first_move_share` (or when nothing else is eligible), then the later ones shuffled."""
    eligible = eligible_positions(steps)
    later = [p for p in eligible if p > 0]
    rng.shuffle(later)
    first = [0] if 0 in eligible and (rng.random() < first_move_share or not later) else []
    return first + later


def inject_mistakes(
    script: Script, steps: list[dict], target: int, mix: dict[str, float], first_move_share: float, rng: random.Random
) -> list[dict] | None:
    """The prefix to continue from: `steps` with mistakes inserted, cut after the last one.

    Positions are tried in `candidate_positions` order; one where no kind of the mix applies is passed
    over for the next, until the row holds `target` corrected mistakes. None when none can be placed."""
    placed: dict[int, dict] = {}
    for position in candidate_positions(steps, first_move_share, rng):
        mistake = injected_step(script, state_after(script, steps[:position]), rng, mix)
        if mistake is not None:
            placed[position] = mistake
        if placed and len(placed) + corrections_before(steps, max(placed)) >= target:
            break
    if not placed:
        return None
    prefix: list[dict] = []
    start = 0
    order = sorted(placed)
    for index, position in enumerate(order):
        prefix += [dict(s) for s in steps[start:position]] + [placed[position]]
        start = position
        if index < len(order) - 1:  # the verified step after it stays as its correction, its thought rewritten
            prefix.append({**steps[position], "thought": "", "open_thought": "correction"})
            start = position + 1
    return prefix


def open_slots(steps: list[dict]) -> list[int]:
    """Indices of the steps whose thought the next call writes."""
    return [i for i, s in enumerate(steps) if s.get("open_thought")]


def fill_thoughts(steps: list[dict], thoughts: list[str]) -> list[dict] | None:
    """The steps with their open thoughts written; None when the reply has not one per open slot."""
    slots = open_slots(steps)
    if len(thoughts) != len(slots) or any(not t.strip() for t in thoughts):
        return None
    filled = [dict(s) for s in steps]
    for index, thought in zip(slots, thoughts):
        kind = filled[index].pop("open_thought")
        filled[index]["thought"] = thought.strip()
        if kind == "correction":
            filled[index]["rewritten_thought"] = True
    return filled
