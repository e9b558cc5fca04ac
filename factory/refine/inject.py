"""Error injection: mistakes placed inside a verified trajectory, so corrections are guaranteed.

The LLM plays first. When its verified steps hold fewer corrected mistakes than
the row aims for (a count drawn from `RefineConfig.mistake_counts`), mistakes
are inserted at positions drawn over the verified prefix (`first_move_mistakes`
decides how often the first move is one): the prefix is cut after the last one,
and the LLM continues from the DM's observation of it. An earlier injection
keeps the verified step after it, which becomes its correction.

A mistake is a slip an agent really makes (slips.py: a wrong value or amount, a
wrong place, a missing item, a skipped step, a premature finish, a stale
belief), its kind drawn by `SlipMix` (the config's `slip_mix`, blended with
what the LLM's own mistakes in the run store were), one the player could make
after what it last read, never a move the row already holds. Its evaluation
comes from the world's step function, not an LLM, so it is right by
construction; it never trains (loss=false) because it is a mistake. Its
thought, the DM's line that answers it (`open_observation`) and the thought of a
kept step that now follows it are left open: the continuation call writes them
in the trajectory's own voice (roles.py), so no template is ever used.
"""

from __future__ import annotations

import random
from typing import Any

from .grounding import dm_feedback
from .script import Script
from .slips import SlipMix, finishing_actions, label_slips, move_key, phase, replay_states, slips_here, weighted_order
from .world import WorldState, check_action, format_action


def mistake_step(
    script: Script, state: WorldState, name: str, params: dict[str, Any], kind: str, where: str
) -> dict[str, Any]:
    """An injected slip (slips.py) as a step: the world's refusal in the DM's private check; its thought and
    the DM's line to the player are left open for the continuation call."""
    checked = check_action(script, state, name, params)
    return {
        "thought": "",
        "action": {"name": name, "params": params},
        **dm_feedback(script, state, format_action(name, params), checked, told=False),
        "evaluation": {"error": checked.error_type, "task_done": False},
        "injected": kind,
        "slip": kind,
        "phase": where,
        "open_thought": "mistake",
        "open_observation": True,
    }


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
    script: Script, steps: list[dict], target: int, mix: SlipMix, first_move_share: float, rng: random.Random
) -> list[dict] | None:
    """The prefix to continue from: `steps` with mistakes inserted, cut after the last one.

    Until the row holds `target` corrected mistakes: a slip kind is drawn among those some eligible
    position allows (`SlipMix`: a kind possible at one spot only is as likely as one possible anywhere),
    then a position that allows it (`_position_for`). No injected move repeats a mistaken move of the row
    (a premature finish may be the finishing move itself, tried too early), and a row's slips are of
    different kinds where it can. None when none can be placed."""
    used = {move_key(s["action"]["name"], s["action"]["params"]) for s in steps if is_mistake(s)}
    row_kinds = {s["slip"] for s in label_slips(script, steps) if "slip" in s}  # the LLM's own slips in the row
    finishing, states = finishing_actions(script), replay_states(script, steps)
    order = candidate_positions(steps, first_move_share, rng)
    found = {p: slips_here(script, states[: p + 1], used, finishing) for p in order}
    placed: dict[int, dict] = {}
    while not placed or len(placed) + corrections_before(steps, max(placed)) < target:
        offered = {p: _unused(found[p], used) for p in order if p not in placed}
        kind = mix.draw({k: [] for moves in offered.values() for k in moves}, None, row_kinds, rng)
        if kind is None:
            break
        position = _position_for(kind, [p for p, moves in offered.items() if kind in moves], steps, mix, rng)
        name, params = rng.choice(offered[position][kind])
        placed[position] = mistake_step(script, states[position], name, params, kind, phase(steps, position))
        used.add(move_key(name, params))
        row_kinds.add(kind)
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


def _unused(found: dict[str, list], used: set[str]) -> dict[str, list]:
    kept = {kind: [m for m in moves if move_key(*m) not in used] for kind, moves in found.items()}
    return {kind: moves for kind, moves in kept.items() if moves}


def _position_for(kind: str, positions: list[int], steps: list[dict], mix: SlipMix, rng: random.Random) -> int:
    """The first move when it was drawn to go first (`candidate_positions`) and allows the kind; otherwise
    a position drawn by how well its phase fits the kind (`SlipMix.fit`)."""
    if positions[0] == 0:
        return 0
    weights = {str(p): mix.fit(phase(steps, p), kind) + 1e-6 for p in positions}
    return int(weighted_order(weights, rng)[0])


def open_slots(steps: list[dict]) -> list[int]:
    """Indices of the steps whose thought the next call writes."""
    return [i for i, s in enumerate(steps) if s.get("open_thought")]


def open_lines(steps: list[dict]) -> list[int]:
    """Indices of the steps whose DM line to the player the next call writes."""
    return [i for i, s in enumerate(steps) if s.get("open_observation")]


def fill_open(steps: list[dict], thoughts: list[str], lines: list[str]) -> list[dict] | None:
    """The steps with their open thoughts and DM lines written; None when the reply has not one
    non-blank text per open slot."""
    slots, line_slots = open_slots(steps), open_lines(steps)
    if len(thoughts) != len(slots) or len(lines) != len(line_slots) or any(not t.strip() for t in thoughts + lines):
        return None
    filled = [dict(s) for s in steps]
    for index, thought in zip(slots, thoughts):
        kind = filled[index].pop("open_thought")
        filled[index]["thought"] = thought.strip()
        if kind == "correction":
            filled[index]["rewritten_thought"] = True
    for index, line in zip(line_slots, lines):
        filled[index].pop("open_observation")
        filled[index]["observation"] = line.strip()
    return filled
