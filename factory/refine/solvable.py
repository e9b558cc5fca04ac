"""Can the task be done? A breadth-first search over a script's world.

A script whose goal no sequence of actions reaches yields only `not_done`
trajectories, so script verification rejects it and feeds the reason back.
The search enumerates every action with every combination of its valid values,
bounded in depth and in states visited; the shortest plan it finds also lets
the DM (under `dm_evaluation: world`) note what would have worked.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

from .script import Script
from .world import WorldState, apply_action, check_action, format_action, goal_reached

MAX_DEPTH = 12
MAX_STATES = 5_000
MAX_CALLS_PER_ACTION = 64


def state_key(state: WorldState) -> tuple:
    return state.location, tuple(sorted(state.inventory)), tuple(sorted((k, tuple(sorted(v))) for k, v in state.items_at.items()))


def candidate_calls(script: Script) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for action in script.actions:
        values = [p.valid_values for p in action.parameters]
        for combo in itertools.islice(itertools.product(*values), MAX_CALLS_PER_ACTION):
            calls.append((action.name, {p.name: v for p, v in zip(action.parameters, combo)}))
    return calls


def shortest_plan(script: Script, start: WorldState | None = None) -> list[tuple[str, dict[str, Any]]] | None:
    """The fewest valid actions from `start` to the goal; [] if it already holds;
    None when unreachable within the bounds or when the script declares no goal."""
    if not script.goal.conditions:
        return None
    start = start or WorldState.initial(script)
    calls = candidate_calls(script)
    frontier = deque([(start, [])])
    seen = {state_key(start)}
    while frontier and len(seen) < MAX_STATES:
        state, plan = frontier.popleft()
        if goal_reached(script, state):
            return plan
        if len(plan) >= MAX_DEPTH:
            continue
        for name, params in calls:
            if check_action(script, state, name, params).ok:
                after = apply_action(script, state, name, params)
                if state_key(after) not in seen:
                    seen.add(state_key(after))
                    frontier.append((after, plan + [(name, params)]))
    return None


def solvability_problems(script: Script, require_goal: bool) -> list[str]:
    """Why the task cannot be done, for the script writer to fix; [] when it can."""
    if not script.goal.conditions:
        return ["declare the goal as conditions (player_at / has_item) so completion can be checked"] if require_goal else []
    plan = shortest_plan(script)
    if plan is None:
        return [f"no sequence of at most {MAX_DEPTH} valid actions reaches the goal; add the moves and items it needs"]
    if not plan:
        return ["the goal already holds at the start; the task must need at least one action"]
    return []


def describe_plan(plan: list[tuple[str, dict[str, Any]]]) -> str:
    return ", then ".join(format_action(name, params) for name, params in plan)
