"""The record shapes that flow through every path (DESIGN "Records").

A trajectory is a list of turns; each turn says whether it trains (`loss`),
what kind of step it is, and, for a mistake, what went wrong and the feedback.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

TurnRole = Literal["system", "user", "assistant", "tool"]

# The AFM blocks whose body is a tool's input (the grammar in coa/afm/blocks.py; the tool_inputs column in
# store/derived.py).
TOOL_TAGS = ("web_search", "crawl_page", "code")


class TurnError(BaseModel):
    type: str  # parameter, location, logic, format, ...
    feedback: str = ""


class Turn(BaseModel):
    role: TurnRole
    content: str
    loss: bool = False  # train on this turn's tokens
    kind: str = "text"  # thought_action, observation, reflection, plan, answer, ...
    error: TurnError | None = None


class Trajectory(BaseModel):
    id: str
    source: Literal["refine", "coa", "import"]
    persona_id: str | None = None
    task_id: str | None = None
    turns: list[Turn]
    final_answer: str | None = None
    correct: bool | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    def stats(self) -> dict[str, Any]:
        """Derived counts used by filters: turns, errors by type, corrections."""
        errors = Counter(t.error.type for t in self.turns if t.error is not None)
        assistant = [t for t in self.turns if t.role == "assistant"]
        corrections = sum(
            1 for before, after in zip(assistant, assistant[1:]) if before.error is not None and after.error is None
        )
        return {
            "turns": len(self.turns),
            "assistant_turns": len(assistant),
            "errors": sum(errors.values()),
            "errors_by_type": dict(errors),
            "corrections": corrections,
            "kinds": dict(Counter(t.kind for t in self.turns)),
        }


def to_conversations(turns: list[Turn]) -> list[dict[str, Any]]:
    """AgentInstruct / AgentRefine format: `from` human|gpt, `value`, `loss`.

    System and tool turns fold into the human side; only assistant turns can train.
    """
    out = []
    for turn in turns:
        speaker = "gpt" if turn.role == "assistant" else "human"
        entry = {"from": speaker, "value": turn.content, "loss": bool(turn.loss and speaker == "gpt")}
        if turn.error is not None:
            entry["error"] = turn.error.model_dump()
        out.append(entry)
    return out
