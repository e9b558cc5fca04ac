"""Can the task be done? A breadth-first search over a script's world.

A script whose goal no sequence of actions reaches yields only `not_done`
trajectories, so script verification rejects it and feeds the reason back, as it
does an action that changes nothing (the world could not tell it happened, so a
task's last action must change the state the goal is about).
The search runs the world's own step function (`world.step`, without validation
code) over every action with every combination of its valid values, bounded in
depth and in states visited (place, inventory, items and facts); the shortest plan it finds also lets
the DM (under `dm_evaluation: world`) note what would have worked.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

from .script import Script
from .values import values_problems
from .world import WorldState, format_action, goal_reached, step

MAX_DEPTH = 12
MAX_STATES = 5_000
MAX_CALLS_PER_ACTION = 64


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
    seen = {start.key()}
    if goal_reached(script, start):
        return []
    while frontier and len(seen) < MAX_STATES:
        state, plan = frontier.popleft()
        if len(plan) >= MAX_DEPTH:
            continue
        for name, params in calls:
            moved = step(script, state, name, params)
            if not moved.check.ok or moved.after.key() in seen:
                continue
            if moved.done:
                return plan + [(name, params)]
            seen.add(moved.after.key())
            frontier.append((moved.after, plan + [(name, params)]))
    return None


def solvability_problems(script: Script, require_goal: bool) -> list[str]:
    """Why the task cannot be done, for the script writer to fix; [] when it can."""
    idle = [
        f"action '{a.name}' changes nothing; give it an effect (e.g. set_fact) so the world records it"
        for a in script.actions
        if not a.effects
    ]
    idle += [problem for a in script.actions for problem in values_problems(a)]
    if not script.goal.conditions:
        missing = [
            "declare the goal as conditions (e.g. fact_true for what the task achieves) so completion can be checked"
        ]
        return idle + (missing if require_goal else [])
    if idle:
        return idle
    plan = shortest_plan(script)
    if plan is None:
        return [f"no sequence of at most {MAX_DEPTH} valid actions reaches the goal; add the moves and items it needs"]
    if not plan:
        return ["the goal already holds at the start; the task must need at least one action"]
    return []


def describe_plan(plan: list[tuple[str, dict[str, Any]]]) -> str:
    return ", then ".join(format_action(name, params) for name, params in plan)
