"""Refine step-level pairs: at each mistake, the step the trajectory should have taken over the one it took.

A verified refine trajectory keeps its mistakes in context (loss false) with the DM's refusal after each,
then the step that corrected them. Each mistaken assistant turn gives one pair (Agent-R / ETO style):

- prompt: the conversation up to that turn, as the trajectory has it (earlier mistakes and their
  refusals stay in context);
- rejected: the mistaken step as written;
- chosen (`pair_chosen: corrected`): the correction the trajectory took, the first accepted step after
  the mistake. Refused moves change nothing in the world, so that step is valid from the mistake's own
  state. Its thought was written after the refusal: only the sentences the prompt grounds are kept
  (pairs_thought.py);
- `pair_chosen: plan` keeps the same chosen side, the correction taken, only where it is also a
  shortest-plan move of the world from the mistake's state (the accepted steps replayed,
  slips.replay_states): the world's shortest plan from after it is one move shorter
  (solvable.shortest_plan). It never chooses the plan's own move: the world plans moves, not thoughts,
  so a move off the trajectory has no thought written for it, and the pair has no chosen side rather
  than an invented one.

A pair without a chosen side keeps its reason (`Pair.missing`); its rejected side is still a KTO row.
A row whose stored steps are not one per assistant turn (refine/output.py writes them so) is damaged:
which of the two is wrong cannot be told, so it gives no pair and is counted (`MismatchedSteps`).
The pair id is the trajectory id and the mistake's turn index, the same in every export.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from ..refine.script import Script
from ..refine.slips import replay_states
from ..refine.solvable import shortest_plan
from ..refine.world import WorldState
from ..refine.world import step as world_step
from .pairs_record import BLANK, Pair, message, turn_messages
from .pairs_thought import grounded_thought

KIND = "refine_step"
STEP_FORM = re.compile(r"^\s*Thought:\s*(?P<thought>.*?)\s*\nAction:\s*(?P<action>.*?)\s*$", re.S)
NO_CORRECTION = "no accepted step follows the mistake"
NOT_REACT = "the correction is not in Thought/Action form"
ONLY_REACTION = "the correction's thought only reacts to the refusal (no sentence the prompt grounds)"
NO_WORLD = "plan: no script or steps to replay the world"
NO_PLAN = "plan: the world finds no plan from the mistake's state"
OFF_PLAN = "plan: the correction is not a shortest-plan move (no thought is written for the plan's move)"
MISMATCHED = "refine row: its steps are not one per assistant turn"


class MismatchedSteps(ValueError):
    """A row whose stored steps and assistant turns differ in number."""


def trains(turn: dict[str, Any]) -> bool:
    """factory.mask.render's rule for an assistant turn: flagged, not a recorded mistake, not blank."""
    return bool(turn.get("loss")) and turn.get("error") is None and not BLANK.match(turn.get("content", ""))


class RefineRow:
    """One kept refine trajectory as the store holds it: its turns, and the steps and script to replay."""

    def __init__(self, trajectory_id: str, script_id: str | None, turns: str, steps: str | None, script: str | None):
        self.trajectory_id, self.script_id = trajectory_id, script_id
        self.turns: list[dict[str, Any]] = json.loads(turns)
        self.assistant = [i for i, turn in enumerate(self.turns) if turn.get("role") == "assistant"]
        self.steps: list[dict[str, Any]] | None = json.loads(steps) if steps else None
        if self.steps is not None and len(self.steps) != len(self.assistant):  # step k is assistant turn k
            raise MismatchedSteps(f"{len(self.steps)} steps for {len(self.assistant)} assistant turns")
        self.script = Script.model_validate_json(script) if script else None
        self._states: list[WorldState] | None = None

    def states(self) -> list[WorldState] | None:
        """The world's state before each step (accepted moves applied), or None without script and steps."""
        if self._states is None and self.script is not None and self.steps is not None:
            self._states = replay_states(self.script, self.steps)
        return self._states


def refine_pairs(row: RefineRow, rule: str) -> Iterator[Pair]:
    """One pair per mistaken assistant turn, in turn order."""
    for k, position in enumerate(row.assistant):
        turn = row.turns[position]
        if turn.get("error") is None or BLANK.match(turn.get("content", "")):
            continue
        pair = Pair(f"{row.trajectory_id}@{position}", KIND, "refine", turn_messages(row.turns[:position]), None,
                    [message("assistant", turn["content"])], script_id=row.script_id,
                    trajectory_id=row.trajectory_id)  # fmt: skip
        pair.chosen, pair.missing = chosen_step(row, k, position, rule)
        yield pair


def chosen_step(row: RefineRow, k: int, position: int, rule: str) -> tuple[list[dict] | None, str | None]:
    """The chosen side for the mistake at assistant turn k (turn index `position`), or None and why."""
    later = [(j, p) for j, p in enumerate(row.assistant) if p > position and trains(row.turns[p])]
    if not later:
        return None, NO_CORRECTION
    c, correction = later[0]
    form = STEP_FORM.match(row.turns[correction]["content"])
    if form is None:
        return None, NOT_REACT
    if rule == "plan" and (why := off_plan(row, k, c)):
        return None, why
    prompt = "\n".join(turn["content"] for turn in row.turns[:position])
    left_out = "\n".join(turn["content"] for turn in row.turns[position:correction])
    thought = grounded_thought(form["thought"], prompt, left_out, form["action"])
    if thought is None:
        return None, ONLY_REACTION
    return [message("assistant", f"Thought: {thought}\nAction: {form['action']}")], None


def off_plan(row: RefineRow, k: int, c: int) -> str | None:
    """Why the correction (step c) is not a shortest-plan move from the mistake's state (step k), or None."""
    states = row.states()
    if states is None:
        return NO_WORLD
    plan = shortest_plan(row.script, states[k])
    if not plan:
        return NO_PLAN
    action = row.steps[c]["action"]
    moved = world_step(row.script, states[k], action["name"], action.get("params") or {})
    rest = shortest_plan(row.script, moved.after) if moved.check.ok else None
    return None if rest is not None and len(rest) == len(plan) - 1 else OFF_PLAN
