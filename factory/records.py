"""The record shapes that flow through every path (DESIGN "Records").

A trajectory is a list of turns; each turn says whether it trains (`loss`),
what kind of step it is, and, for a mistake, what went wrong and the feedback.
`TrajectoryStats` is the `stats` a trajectory row stores for the filters.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

TurnRole = Literal["system", "user", "assistant", "tool"]


class TurnError(BaseModel):
    type: str  # parameter, location, logic, format, ...
    feedback: str = ""


class Turn(BaseModel):
    role: TurnRole
    content: str
    loss: bool = False  # train on this turn's tokens
    kind: str = "text"  # thought_action, observation, reflection, plan, answer, ...
    error: TurnError | None = None
    # Native tool calling (imported ATIF/ADP rows, factory/interchange): an assistant turn's calls in OpenAI's
    # shape, and a tool turn's answer to one. Stored only when set (`stored`), so other rows keep their shape.
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def stored(self) -> dict[str, Any]:
        native = ("tool_calls", "tool_call_id", "name")
        return self.model_dump(exclude={key for key in native if getattr(self, key) is None})


class Trajectory(BaseModel):
    id: str
    source: Literal["refine", "coa", "import"]
    persona_id: str | None = None
    task_id: str | None = None
    turns: list[Turn]
    final_answer: str | None = None
    correct: bool | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    def stats(self) -> TrajectoryStats:
        """Derived counts used by filters: turns, errors by type, corrections."""
        errors = Counter(t.error.type for t in self.turns if t.error is not None)
        assistant = [t for t in self.turns if t.role == "assistant"]
        corrections = sum(
            1 for before, after in zip(assistant, assistant[1:]) if before.error is not None and after.error is None
        )
        return TrajectoryStats(
            turns=len(self.turns),
            assistant_turns=len(assistant),
            errors=sum(errors.values()),
            errors_by_type=dict(errors),
            corrections=corrections,
            kinds=dict(Counter(t.kind for t in self.turns)),
        )


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


def _stat(meaning: str, filtered: bool = False) -> Any:
    # filtered: the built-in filters read the field (filters/sql.py parses these into a typed struct).
    return Field(default=None, description=meaning, json_schema_extra={"filtered": True} if filtered else None)


class TrajectoryStats(BaseModel):
    """The `stats` JSON of a trajectory row: counts derived once, when the row is written.

    A refine row fills the first group (from its turns, `Trajectory.stats`), a coa or import row the
    second (from its trace's events, coa/stats.py); a failed row may hold none. Only the fields a path
    set are stored, in this order, so each path's JSON has its own keys and nothing else.
    """

    # refine: counted from the turns
    turns: int | None = _stat("turns of every role", filtered=True)
    assistant_turns: int | None = _stat("assistant turns: a refine row's tool interactions", filtered=True)
    errors: int | None = _stat("turns with a mistake")
    errors_by_type: dict[str, int] | None = _stat("mistakes by type: parameter, location, logic, format, ...")
    corrections: int | None = _stat("assistant turns with a mistake followed by one without", filtered=True)
    kinds: dict[str, int] | None = _stat("turns by kind: thought_action, observation, ...")
    provenance: dict[str, Any] | None = _stat("how the row was made: judging mode, script source, calls")
    # refine: state assertions of the trained thoughts about the script's things (refine/grounded_thoughts.py)
    state_assertions: int | None = _stat(
        "state assertions (place, inventory, an item's place, a state) in trained thoughts"
    )
    ungrounded_assertions: int | None = _stat("those neither what the player read nor the replayed world supports")
    ungrounded_thoughts: int | None = _stat(
        "trained thoughts with an ungrounded state assertion, or naming another move than their action", filtered=True
    )
    ungrounded_thought: str | None = _stat("the first ungrounded assertion: its clause, turn and reason")
    # coa and import: counted from the trace's events, so the code variant reports the same work as mas
    tool_calls: int | None = _stat("tool calls", filtered=True)
    tool_calls_by_type: dict[str, int] | None = _stat("tool calls by tool name")
    tool_failures: int | None = _stat("tool calls that failed")
    plans: int | None = _stat("plan events, re-plans included")
    replans: int | None = _stat("plan events marked as a re-plan", filtered=True)
    reflections: int | None = _stat("reflection events", filtered=True)
    poor_reflections: int | None = _stat("reflections with a score of poor")
    double_checks: int | None = _stat("double-check events")
    double_check_scores: list[int] | None = _stat("the double checks' scores, in order")
    low_double_check_corrected: bool | None = _stat("a double check <= 2 and a later one >= 3", filtered=True)
    correct: bool | None = _stat("the checker's verdict on the final answer; null when unchecked")
    llm_calls: int | None = _stat("LLM calls the trace made")
    prompt_tokens: int | None = _stat("prompt tokens of those calls")
    completion_tokens: int | None = _stat("completion tokens of those calls")
    duration_s: float | None = _stat("wall-clock seconds of the run")
    # coa: the plan's steps and what the answer rests on (coa/grounding.py)
    plan_steps: int | None = _stat("steps of the last plan")
    steps_done: int | None = _stat("plan steps marked done by a reflection")
    steps_skipped: int | None = _stat("plan steps dropped with a stated reason")
    claims: int | None = _stat("answer-bearing claims: the answer and each fact it cites", filtered=True)
    grounded_claims: int | None = _stat("claims whose key terms appear in the observation they cite", filtered=True)
    ungrounded_claims: list[str] | None = _stat("the claims no observation supports, as written")
    answer_before_tool: bool | None = _stat(
        "the final answer was written before the first observation (recalled, not found)", filtered=True
    )

    def to_json(self) -> str:
        """The stored text: the fields the path set, in field order (json.dumps' default separators)."""
        return json.dumps(self.model_dump(exclude_unset=True))

    def mistake_columns(self) -> dict[str, int | None]:
        """The counts the table keeps as columns: a refine row's mistakes and corrections, or a coa
        row's failed tool calls and re-plans (the two groups never share a row)."""
        if self.errors is not None:
            return {"n_errors": self.errors, "n_corrections": self.corrections}
        return {"n_errors": self.tool_failures, "n_corrections": self.replans}

    @classmethod
    def filtered_fields(cls) -> dict[str, type]:
        """The fields the built-in filters read, with their Python type (None stripped)."""
        return {
            name: next(t for t in getattr(field.annotation, "__args__", ()) if t is not type(None))
            for name, field in cls.model_fields.items()
            if (field.json_schema_extra or {}).get("filtered")
        }
