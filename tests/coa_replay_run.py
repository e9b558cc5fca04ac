"""Replay a recorded coa set end to end and measure what a trainer would keep of it.

    figures = replay_figures("benchmarks/data/coa_replay/capable_v1", run_dir)

Runs `factory coa` over loopback HTTP against the recorded replies (coa_replay.py), the
closed-book pass the set recorded before each qa run, and the shipped filters
(examples/filters.yaml); then reads the store: which correct trajectories the filters keep
(synthesized and seed tasks apart), tool calls, LLM calls and tokens per kept trajectory, the
grounded-claim share, the most frequent openings of trained thoughts and reflections, the
distiller's phrases (must be 0) and the closed-book pass rates. Used by
`benchmarks/coa_yield.py --replay` and tests/test_coa_replay.py.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from coa_replay import CoaReplayServer, closed_book, replay_config, write_tasks

REPO = Path(__file__).resolve().parents[1]
FILTERS = REPO / "examples" / "filters.yaml"
ROWS_SQL = """
SELECT t.task_id, t.verified, t.correct, coalesce(c.keep, true) AS kept, c.dropped_by, t.stats, t.llm_calls,
       coalesce(t.prompt_tokens, 0) + coalesce(t.completion_tokens, 0) AS tokens
FROM trajectories t LEFT JOIN curation c USING (trajectory_id) WHERE t.source = 'coa' ORDER BY t.task_id
"""


def replay_figures(set_dir: str | Path, run_dir: str | Path) -> dict[str, Any]:
    from factory.coa import run_coa
    from factory.filters import run_filters
    from factory.reporting.coa_quality import coa_quality
    from factory.run_config import FactoryConfig
    from factory.store import Store

    run_dir = Path(run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    server = CoaReplayServer(set_dir)
    base_url = server.start_in_thread()
    try:
        tasks = write_tasks(server.recordings, run_dir.with_suffix(".tasks.jsonl"))
        config = replay_config(server.settings, tasks, run_dir, base_url, len(server.recordings), False)
        outcome = run_coa(FactoryConfig.model_validate(config), progress=False)
        closed = closed_book(server.recordings, tasks, base_url, run_dir.with_suffix(".closed"))
    finally:
        server.stop()
    run_filters(run_dir, FILTERS)
    with Store.open(run_dir) as store:
        rows = [dict(zip(ROW_KEYS, row)) for row in store.query(ROWS_SQL)]
        quality = coa_quality(store)
    return {
        "tasks": len(server.recordings),
        "funnel": outcome.funnel,
        "failures": outcome.failures,
        "replay_missing_replies": len(server.missing),
        **kept_figures(rows),
        "quality": {key: quality[key] for key in ("openings", "answer_before_tool", "grounding", "distiller_phrases")},
        "closed_book": closed_figures(closed),
    }


ROW_KEYS = ("task_id", "verified", "correct", "kept", "dropped_by", "stats", "llm_calls", "tokens")


def synthesized(row: dict) -> bool:
    return str(row["task_id"]).startswith("synth:")


def kept_figures(rows: list[dict]) -> dict[str, Any]:
    for row in rows:
        row["tool_calls"] = (json.loads(row["stats"] or "{}") or {}).get("tool_calls") or 0
    correct = [row for row in rows if row["verified"] and row["correct"]]
    kept = [row for row in correct if row["kept"]]
    groups = {"synthesized": [r for r in correct if synthesized(r)], "seed": [r for r in correct if not synthesized(r)]}
    return {
        "correct": len(correct),
        "kept_of_correct": share(len(kept), len(correct)),
        "by_group": {name: group_figures(group) for name, group in groups.items()},
        "dropped_correct_by": dict(Counter(str(row["dropped_by"]) for row in correct if not row["kept"])),
        "tool_calls_per_kept": {
            "median": median([r["tool_calls"] for r in kept]),
            "histogram": histogram([r["tool_calls"] for r in kept]),
        },  # fmt: skip
        "llm_calls_per_kept": median([r["llm_calls"] for r in kept]),
        "tokens_per_kept": median([r["tokens"] for r in kept]),
    }


def group_figures(rows: list[dict]) -> dict[str, Any]:
    calls = [row["tool_calls"] for row in rows]
    return {
        "correct": len(rows),
        "kept": sum(row["kept"] for row in rows),
        "kept_share": share(sum(row["kept"] for row in rows), len(rows)),
        "afm_rule_share": share(sum(c >= 5 for c in calls), len(rows)),  # at least 5 tool calls
        "tool_calls_median": median(calls),
        "tool_calls": histogram(calls),
    }


def closed_figures(rows: list[dict]) -> dict[str, Any]:
    rates = [row["pass_rate"] for row in rows if row.get("pass_rate") is not None]
    return {
        "tasks": len(rates),
        "mean_pass_rate": round(statistics.mean(rates), 3) if rates else None,
        "above_0_3": sum(rate > 0.3 for rate in rates),
    }


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def histogram(values: list[int]) -> dict[str, int]:
    return {str(value): count for value, count in sorted(Counter(values).items())}
