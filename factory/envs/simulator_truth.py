"""What the real world says about recorded moves: the truth the simulator is measured against and trained on.

A recorded refine trajectory is replayed through `world.step` move by move: each move gets the world's
verdict (accepted, error type, goal reached) in the state the earlier accepted moves left, and keeps the line
the player was told. The agreement measure (simulator_agreement.py) compares the simulator with these
verdicts; the simulator's SFT rows (factory/export/world_model.py) take them, with the DM's check written
from the world's state and rule, as the reply the simulator should give.

A move the declarative rules allow but the recorded trajectory refused was refused by the script's
validation code, which the simulator's prompt does not show (it runs in the sandbox): it is marked
`code_refused`, kept in the history as refused, and neither measured nor trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..refine.narration import display
from ..refine.script import Script
from ..refine.world import WorldState
from ..refine.world import step as world_step
from .simulator import action_call, reply_text


@dataclass
class JudgedStep:
    action: dict[str, Any]  # {"name", "params"} as played
    observation: str  # what the player was told
    accepted: bool
    error_type: str | None  # the world's error type; None when accepted
    goal_reached: bool
    before: WorldState  # the state the move was judged in
    rule: str  # why the world refused it (its rule in plain words), "" when accepted
    code_refused: bool = False

    def history_entry(self) -> dict[str, Any]:
        """The move as the simulator's `history` holds it."""
        return {"action": self.action, "observation": self.observation, "accepted": self.accepted}


def judge_steps(script: Script, steps: list[dict]) -> list[JudgedStep]:
    """Every recorded move with the world's verdict, in the state the accepted moves before it left."""
    state, judged = WorldState.initial(script), []
    for raw in steps:
        action = {"name": raw["action"]["name"], "params": raw["action"].get("params") or {}}
        moved = world_step(script, state, action["name"], action["params"])
        recorded = (raw.get("evaluation") or {}).get("error", "none")
        code = moved.check.ok and recorded not in (None, "none")  # only validation code refuses a valid move
        accepted = moved.check.ok and not code
        error = None if accepted else "logic" if code else moved.check.error_type
        rule = "" if accepted else moved.check.rule or moved.check.reason
        judged.append(JudgedStep(action, str(raw.get("observation", "")), accepted, error,
                                 accepted and moved.done is True, state, rule, code))  # fmt: skip
        state = moved.after if accepted else state
    return judged


def history_before(judged: list[JudgedStep], index: int) -> list[dict[str, Any]]:
    return [step.history_entry() for step in judged[:index]]


def _names(values: list[str]) -> str:
    return ", ".join(values) or "nothing"


def describe_state(state: WorldState) -> str:
    """The state as the DM's check states it (identifiers kept: the DM's rules name things by them)."""
    facts = _names(sorted(state.facts)) if state.facts else "none"
    return (
        f"the player is in {state.location}, carrying {_names(state.inventory)}; here: "
        f"{_names(state.items_here())}; true facts: {facts}."
    )


def world_check(step: JudgedStep) -> str:
    """The DM's check the world would write: the state before the move, then the rule's verdict."""
    call = action_call(step.action)
    if step.accepted:
        verdict = f"{call} is allowed; " + (
            "the goal holds after it." if step.goal_reached else "the goal does not hold yet."
        )
    else:
        verdict = f"{call} is refused ({display(step.error_type)}): {step.rule.rstrip('.')}."
    return f"Before the move {describe_state(step.before)} {verdict}"


def world_reply(step: JudgedStep) -> str:
    """The reply the simulator should give for this move: the world's check, the line told, the verdict."""
    return reply_text(world_check(step), step.observation, step.error_type, step.goal_reached)
