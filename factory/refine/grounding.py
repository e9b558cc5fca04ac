"""The world model as the DM's judge ("dm_evaluation: world").

In this mode the LLM still writes the player's thoughts and actions and the
DM's narration, but each action's evaluation (error type, task done) comes from
replaying the script's world: the declarative rules and, when on, the
validation code. A mistaken action's DM lines become the world's own feedback,
and the episode ends at the step that reaches the goal. The verifier still runs
every rule; the ones about the DM's judgement then hold by construction.

Why: a small model picks plausible actions but cannot judge them, so under
"llm" it loses nearly every trajectory to false alarms and missed errors. The
trajectory's provenance records the mode so a dataset can keep or drop it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from ..paths import prompts_dir
from .script import Script
from .solvable import describe_plan, shortest_plan
from .verify import ExtraCheck, Step, judge_action
from .world import WorldState, apply_action, check_action, format_action, goal_reached


@lru_cache(maxsize=1)
def feedback_templates() -> dict[str, str]:
    """How the DM words a rejected action (shared with error injection)."""
    return json.loads((prompts_dir() / "refine" / "injected_step.json").read_text())


def state_after(script: Script, steps: list[dict]) -> WorldState:
    """The world after replaying verified steps: actions the DM accepted and the rules allow."""
    state = WorldState.initial(script)
    for step in steps:
        action = step["action"]
        accepted = step["evaluation"]["error"] == "none"  # validation code may have refused a rule-valid action
        if accepted and check_action(script, state, action["name"], action["params"]).ok:
            state = apply_action(script, state, action["name"], action["params"])
    return state


def dm_feedback(script: Script, state: WorldState, call: str, reason: str) -> dict[str, str]:
    """The DM's lines for a rejected action: its private check and what the player sees."""
    text = feedback_templates()
    thinking = text["dm_thinking"].format(action=call, reason=reason)
    plan = shortest_plan(script, state)
    if plan:  # the DM knows the whole world; this private note steers the continuation, the player never reads it
        thinking += f" What would work from here: {describe_plan(plan)}."
    return {"dm_thinking": thinking, "observation": text["observation"].format(action=call, reason=reason)}


def _rejected(script: Script, state: WorldState, step: dict[str, Any], error_type: str, reason: str) -> dict[str, Any]:
    call = format_action(step["action"]["name"], step["action"]["params"])
    feedback = dm_feedback(script, state, call, reason)
    return {**step, **feedback, "evaluation": {"error": error_type, "task_done": False}}


def ground_steps(script: Script, prefix: list[dict], steps: list[dict], extra: ExtraCheck | None) -> list[dict]:
    """New steps with the world's evaluation, cut after the step that completes the task."""
    state = state_after(script, prefix)
    grounded: list[dict] = []
    for raw in steps:
        try:
            step = Step.model_validate(raw)
        except ValidationError:
            return grounded + [raw]  # malformed: the verifier reports it as a format failure
        truth = judge_action(script, state, step, extra)
        if not truth.ok:
            grounded.append(_rejected(script, state, raw, truth.error_type, truth.reason))
            continue
        state = apply_action(script, state, step.action.name, step.action.params)
        reached = goal_reached(script, state)
        done = step.evaluation.task_done if reached is None else reached  # no declared goal: the LLM's DM decides
        grounded.append({**raw, "evaluation": {"error": "none", "task_done": done}})
        if done:
            break
    return grounded
