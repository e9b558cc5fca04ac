"""Reading and writing the Chain-of-Agents tables (migrations 0006_coa, 0010_coa_trace_tools, 0012_coa_trace_steps).

`coa_traces` holds one row per trace (events as JSON); the distilled
trajectory, or the failure that stopped it, is one row of `trajectories` under
the same id, so a rerun knows the task is finished.
"""

from __future__ import annotations

import json
from typing import Any

from ..records import Trajectory, TrajectoryStats
from ..store import Store, utcnow
from ..store.trajectories import write_trajectory
from .tools.registry import tool_tags
from .trace import Trace


def save_trace(store: Store, trace: Trace) -> None:
    prompt_tokens, completion_tokens = trace.tokens()
    store.upsert("coa_traces", {
        "trace_id": trace.trace_id, "task_id": trace.task_id, "source": trace.source, "variant": trace.variant,
        "domain": trace.domain, "question": trace.question, "status": trace.status, "reason": trace.reason,
        "final_answer": trace.final_answer, "agents": json.dumps(trace.agents), "tools": list(trace.tools),
        "events": json.dumps([e.model_dump(exclude_none=True) for e in trace.events]), "steps": json.dumps(trace.steps),
        "n_events": len(trace.events), "n_tool_calls": len(trace.tool_calls()), "n_replans": trace.replans(),
        "llm_calls": trace.llm_calls(), "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "cost_usd": trace.cost_usd(), "duration_s": trace.duration_s, "created_at": utcnow(),
    })  # fmt: skip


TRACE_FIELDS = ("trace_id", "task_id", "source", "variant", "domain", "question", "agents", "tools", "events",
                "final_answer", "status", "reason", "duration_s", "steps")  # fmt: skip


def load_trace(store: Store, trace_id: str) -> Trace | None:
    rows = store.query(f"SELECT {', '.join(TRACE_FIELDS)} FROM coa_traces WHERE trace_id = ?", [trace_id])
    if not rows:
        return None
    row = dict(zip(TRACE_FIELDS, rows[0]))
    row["agents"], row["events"] = json.loads(row["agents"]), json.loads(row["events"])
    row["tools"] = row["tools"] or []  # NULL: stored before 0010; `offered_tools` counts the calls instead
    row["steps"] = json.loads(row["steps"]) if row["steps"] else []  # NULL: stored before 0012
    return Trace.model_validate(row)


def trace_row(trace: Trace) -> dict[str, Any]:
    """The trajectory-row columns every outcome of a trace shares."""
    prompt_tokens, completion_tokens = trace.tokens()
    return {
        "trajectory_id": trace.trace_id, "trace_id": trace.trace_id, "task_id": trace.task_id,
        "source": "coa" if trace.source == "mas" else "import", "variant": trace.variant,
        "llm_calls": trace.llm_calls(), "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "cost_usd": trace.cost_usd(),
    }  # fmt: skip


def save_failure(store: Store, trace: Trace, rule: str, reason: str, stats: TrajectoryStats | None = None) -> None:
    row = {**trace_row(trace), "verified": False, "rule": rule, "reason": reason, "final_answer": trace.final_answer}
    write_trajectory(store, row, None, stats, tool_tags())


def save_distilled(store: Store, trace: Trace, trajectory: Trajectory, single: dict[str, Any],
                   stats: TrajectoryStats, check_detail: str | None) -> None:  # fmt: skip
    """A grammar-valid trajectory: the multi-turn form (turns, conversations) and the single string."""
    row = {
        **trace_row(trace), "verified": True, "rule": None, "reason": None,
        "prompt": single["prompt"], "completion": single["completion"],
        "observation_spans": json.dumps(single["observation_spans"]), "final_answer": trajectory.final_answer,
        "correct": trajectory.correct, "check_detail": check_detail,
    }  # fmt: skip
    write_trajectory(store, row, trajectory, stats, tool_tags())


def finished_ids(store: Store) -> set[str]:
    """Tasks a rerun skips: all but those cut off by coa.task_timeout_s, which a rerun resumes from their
    cached calls (its row is replaced by what the new run makes of the task)."""
    return {
        r[0]
        for r in store.query(
            "SELECT trajectory_id FROM trajectories WHERE source IN ('coa', 'import') AND rule IS DISTINCT FROM 'timeout'"
        )
    }


def coa_funnel(store: Store, source: str = "coa") -> dict[str, int]:
    """tasks (or imported traces) -> answered -> grammar-valid distillations -> correct."""
    tasks, valid, correct = store.query(
        "SELECT count(*), count(*) FILTER (verified), count(*) FILTER (verified AND correct) "
        "FROM trajectories WHERE source = ?",
        [source],
    )[0]
    trace_source = "mas" if source == "coa" else "import:%"
    (answered,) = store.query(
        "SELECT count(*) FROM coa_traces WHERE source LIKE ? AND status = 'answered'", [trace_source]
    )[0]
    return {"tasks": tasks, "answered": answered, "distilled": valid, "correct": correct}


def failure_counts(store: Store, source: str = "coa") -> dict[str, int]:
    """Why tasks were lost: a run status (llm_error, exhausted, ...) or the grammar rule broken."""
    return dict(
        store.query(
            "SELECT rule, count(*) FROM trajectories WHERE source = ? AND NOT verified GROUP BY 1 ORDER BY 2 DESC, 1",
            [source],
        )
    )
