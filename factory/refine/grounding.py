"""The world model as the DM's judge ("dm_evaluation: world").

In this mode the LLM still writes the player's thoughts and actions, but each
action's evaluation (error type, task done) comes from replaying the script's
world (`world.step`: the declarative rules and, when on, the validation code),
and so do the DM's lines: a refused action gets the world's refusal, an accepted
one the world's narration of what it changed (prose.py), both in the DM's voice
and the second person, with display names and no fact ids. The LLM's own DM
text never reaches the data: a small model narrates moves that did not happen.
The episode ends at the step that reaches the goal. The verifier still runs
every rule; the ones about the DM's judgement then hold by construction.

Why: a small model picks plausible actions but cannot judge them, so under
"llm" it loses nearly every trajectory to false alarms and missed errors. The
trajectory's provenance records the mode so a dataset can keep or drop it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .narration import words
from .prose import narrate_success
from .script import Script
from .solvable import describe_plan, shortest_plan
from .verify import Step
from .world import ActionCheck, ExtraCheck, WorldState, format_action
from .world import step as world_step


def state_after(script: Script, steps: list[dict]) -> WorldState:
    """The world after replaying verified steps: actions the DM accepted and the rules allow."""
    state = WorldState.initial(script)
    for done in steps:
        action = done["action"]
        accepted = done["evaluation"]["error"] == "none"  # validation code may have refused a rule-valid action
        moved = world_step(script, state, action["name"], action["params"])
        if accepted and moved.check.ok:
            state = moved.after
    return state


def dm_feedback(script: Script, state: WorldState, call: str, check: ActionCheck, told: bool = True) -> dict[str, str]:
    """The DM's lines for a refused action: its private check and what the player is told. With `told`
    False the check names the rule only: the DM's words to the player are left for the LLM to write
    (an injected mistake, inject.py), and no world phrasing is there to copy."""
    template = words()["dm_rejects" if told else "dm_rejects_open"]
    thinking = template.format(action=call, rule=check.rule or check.reason, reason=check.reason)
    plan = shortest_plan(script, state)
    if plan:  # the DM knows the whole world; this private note steers the continuation, the player never reads it
        thinking += f" What would work from here: {describe_plan(plan)}."
    return {"dm_thinking": thinking, "observation": check.reason}


def accepted_feedback(
    script: Script, before: WorldState, after: WorldState, name: str, params: dict[str, Any], done: bool = False
) -> dict[str, str]:
    """The DM's lines for an accepted action: what it changed, in prose (prose.py); its private note names the call."""
    told = narrate_success(script, before, after, name, params, done)
    return {
        "dm_thinking": words()["accepted"].format(action=format_action(name, params), state=told),
        "observation": told,
    }


def _rejected(script: Script, state: WorldState, raw: dict[str, Any], check: ActionCheck) -> dict[str, Any]:
    call = format_action(raw["action"]["name"], raw["action"]["params"])
    feedback = dm_feedback(script, state, call, check)
    return {**raw, **feedback, "evaluation": {"error": check.error_type, "task_done": False}}


def ground_steps(script: Script, prefix: list[dict], steps: list[dict], extra: ExtraCheck | None) -> list[dict]:
    """New steps with the world's evaluation, cut after the step that completes the task."""
    state = state_after(script, prefix)
    grounded: list[dict] = []
    for raw in steps:
        try:
            parsed = Step.model_validate(raw)
        except ValidationError:
            return grounded + [raw]  # malformed: the verifier reports it as a format failure
        moved = world_step(script, state, parsed.action.name, parsed.action.params, extra)
        if not moved.check.ok:
            grounded.append(_rejected(script, state, raw, moved.check))
            continue
        before, state = state, moved.after
        done = (
            parsed.evaluation.task_done if moved.done is None else moved.done
        )  # no declared goal: the LLM's DM decides
        told = accepted_feedback(script, before, state, parsed.action.name, parsed.action.params, moved.done is True)
        grounded.append({**raw, **told, "evaluation": {"error": "none", "task_done": done}})
        if done:
            break
    return grounded
