"""Verified steps → a refinement-tuning trajectory.

User turns are what the DM shows the player; assistant turns are the player's
thought and action in ReAct form. An erroneous assistant turn stays in the
context with loss=false and keeps its error type and the DM's feedback.
"""

from __future__ import annotations

from ..prompts import render_prompt
from ..records import Trajectory, Turn, TurnError
from .narration import opening_observation
from .roles import describe_actions
from .script import Script
from .verify import StepCheck
from .world import format_action

__all__ = ["build_trajectory", "opening_observation"]


def build_trajectory(trajectory_id: str, script: Script, checks: list[StepCheck], provenance: dict) -> Trajectory:
    first = render_prompt(
        "refine/player_instruction",
        task=script.task,
        actions=describe_actions(script),
        observation=opening_observation(script),
    )
    turns = [Turn(role="user", content=first, kind="observation")]
    for check in checks:
        step = check.step
        mistake = not check.action.ok
        error = TurnError(type=check.action.error_type, feedback=step.observation) if mistake else None
        content = f"Thought: {step.thought}\nAction: {format_action(step.action.name, step.action.params)}"
        turns.append(Turn(role="assistant", content=content, loss=not mistake, kind="thought_action", error=error))
        turns.append(Turn(role="user", content=f"Observation: {step.observation}", kind="observation"))
    return Trajectory(
        id=trajectory_id, source="refine", persona_id=script.persona_id, turns=turns[:-1],
        final_answer=checks[-1].step.observation if checks else None, correct=True, provenance=provenance,
    )  # fmt: skip
