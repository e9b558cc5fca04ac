"""The trajectory verifier (AgentRefine, Algorithm 1), rule by rule.

Each step is one player move and the DM's answer. The verifier replays the
script's world through `world.step` (the declarative rules, then the optional
extra check such as validation code, with values in their declared types) and
checks, in order, at every step:

  format          the step has the required fields with the right types
  unflagged_error the action is invalid but the DM's evaluation says "none"
  false_alarm     the action is valid but the DM flagged an error
  wrong_error     the DM flagged an error of another type than the real one
  early_done      the DM declares the task done before the last step
  false_done      the DM declares the task done but the script's goal does not hold
  missed_done     the script's goal holds after this step but the DM goes on: the
                  step that completes the task must be the trajectory's last

and after the last step:

  not_done            the last step does not complete the task
  too_few_corrections fewer than `min_corrections` mistakes were corrected

A failure at step t keeps steps before t: the generator continues from there.
`too_few_corrections` means the story itself is too clean: start over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .script import Script
from .world import ActionCheck, ExtraCheck, WorldState
from .world import step as world_step


class PlayerAction(BaseModel):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class Evaluation(BaseModel):
    # The LLM DM's schema offers ERROR_TYPES (schemas.py): its actions are tied to the script's, so none is
    # unknown; the world-judged DM (grounding.py) names the world's type, an unknown action's included.
    error: Literal["none", "parameter", "location", "logic", "unknown_action"]
    task_done: bool


class Step(BaseModel):
    thought: str
    action: PlayerAction
    dm_thinking: str = ""
    observation: str
    evaluation: Evaluation


@dataclass
class StepCheck:
    step: Step
    action: ActionCheck  # the ground truth for this action
    state_after: WorldState


@dataclass
class TrajectoryVerdict:
    ok: bool
    rule: str | None = None
    failed_step: int | None = None  # index of the first bad step
    reason: str = ""
    checks: list[StepCheck] = field(default_factory=list)  # the steps that passed
    corrections: int = 0

    @property
    def restart(self) -> bool:
        """Whether to regenerate from scratch instead of continuing from the verified prefix."""
        return self.rule == "too_few_corrections" or self.failed_step == 0


# The LLM DM's schema has no `unknown_action` (it cannot decode an unknown action): "logic" is its word for one.
LLM_DM_WORD = {"unknown_action": "logic"}


def _dm_disagrees(step: Step, truth: ActionCheck) -> tuple[str, str] | None:
    flagged = step.evaluation.error
    if not truth.ok and flagged == "none":
        return "unflagged_error", f"invalid action not flagged by the DM: {truth.reason}"
    if truth.ok and flagged != "none":
        return "false_alarm", f"the DM flagged a {flagged} error on a valid action"
    if not truth.ok and flagged not in (truth.error_type, LLM_DM_WORD.get(truth.error_type)):
        return "wrong_error", f"the DM said {flagged} error; it is a {truth.error_type} error: {truth.reason}"
    return None


def count_corrections(checks: list[StepCheck]) -> int:
    """Mistakes followed by a valid action: the refinement steps the data teaches."""
    return sum(1 for a, b in zip(checks, checks[1:]) if not a.action.ok and b.action.ok)


def verify_steps(
    script: Script, raw_steps: list[Any], min_corrections: int = 2, extra: ExtraCheck | None = None
) -> TrajectoryVerdict:
    state = WorldState.initial(script)
    checks: list[StepCheck] = []
    last = len(raw_steps) - 1
    for index, raw in enumerate(raw_steps):
        fail = _check_one(script, state, raw, index == last, extra)
        if isinstance(fail, tuple):
            rule, reason = fail
            return TrajectoryVerdict(False, rule, index, reason, checks, count_corrections(checks))
        checks.append(fail)
        state = fail.state_after
    return _check_ending(checks, min_corrections)


def _check_one(script: Script, state: WorldState, raw: Any, is_last: bool, extra) -> StepCheck | tuple[str, str]:
    try:
        step = raw if isinstance(raw, Step) else Step.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        return "format", f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    moved = world_step(script, state, step.action.name, step.action.params, extra)
    disagreement = _dm_disagrees(step, moved.check)
    if disagreement:
        return disagreement
    if step.evaluation.task_done:
        if not is_last:
            return "early_done", "the DM declared the task done before the last step"
        if moved.done is False:
            return "false_done", "the DM declared the task done but the goal does not hold"
    elif moved.done:
        return "missed_done", "the goal holds after this step but the DM did not declare the task done"
    return StepCheck(step, moved.check, moved.after)


def _check_ending(checks: list[StepCheck], min_corrections: int) -> TrajectoryVerdict:
    corrections = count_corrections(checks)
    if not checks or not checks[-1].step.evaluation.task_done:
        return TrajectoryVerdict(
            False, "not_done", len(checks), "the trajectory ends before the task is done", checks, corrections
        )
    if corrections < min_corrections:
        reason = f"{corrections} correction(s), at least {min_corrections} required"
        return TrajectoryVerdict(False, "too_few_corrections", None, reason, checks, corrections)
    return TrajectoryVerdict(True, checks=checks, corrections=corrections)
