"""Per-trajectory stats for filtering (DESIGN "Records": derived stats).

Counts come from the trace's events, not from the distilled blocks, so the
code variant (which folds re-plans and checks into <think>) reports the same
multi-agent work as the mas variant would.
"""

from __future__ import annotations

from collections import Counter

from ..records import TrajectoryStats
from .grounding import grounding
from .trace import Trace


def double_check_scores(trace: Trace) -> list[int]:
    return [int(e.scores["score"]) for e in trace.events if e.kind == "double_check" and "score" in e.scores]


def low_check_corrected(scores: list[int]) -> bool:
    """A double check scored <= 2 and a later one >= 3: the self-corrections the AFM paper upsamples."""
    first_low = next((i for i, score in enumerate(scores) if score <= 2), None)
    return first_low is not None and any(score >= 3 for score in scores[first_low + 1 :])


def coa_stats(trace: Trace, correct: bool | None = None) -> TrajectoryStats:
    kinds = Counter(event.kind for event in trace.events)
    calls = trace.tool_calls()
    scores = double_check_scores(trace)
    prompt_tokens, completion_tokens = trace.tokens()
    return TrajectoryStats(
        tool_calls=len(calls),
        tool_calls_by_type=dict(Counter(call.name for call in calls)),
        tool_failures=sum(1 for call in calls if not call.ok),
        plans=kinds["plan"],
        replans=trace.replans(),
        reflections=kinds["reflection"],
        poor_reflections=sum(1 for e in trace.events if e.kind == "reflection" and "poor" in e.scores.values()),
        double_checks=kinds["double_check"],
        double_check_scores=scores,
        low_double_check_corrected=low_check_corrected(scores),
        correct=correct,
        llm_calls=trace.llm_calls(),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        duration_s=trace.duration_s,
        **plan_counts(trace),
        **grounding_fields(trace),
    )


def plan_counts(trace: Trace) -> dict[str, int]:
    """The last plan's steps and their states (Trace.steps); none for imports, which keep no plan state."""
    if not trace.steps:
        return {}
    states = Counter(step.get("state") for step in trace.steps)
    return {"plan_steps": len(trace.steps), "steps_done": states["done"], "steps_skipped": states["dropped"]}


def grounding_fields(trace: Trace) -> dict:
    found = grounding(trace)
    if not found.claims:  # no accepted answer with evidence: nothing to say
        return {}
    return {"claims": found.claims, "grounded_claims": found.grounded, "ungrounded_claims": found.ungrounded,
            "answer_before_tool": found.answer_before_tool}  # fmt: skip
