"""Summaries of a run's call log, `llm_calls` (`factory calls RUN_DIR`, `factory status`, the HTML report's totals).

`call_totals` is the one query for the whole-log figures: the calls command's summary and the report's
overview both read it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..store import Store

TOTALS = {  # figure -> its aggregate over llm_calls
    "calls": "count(*)",
    "ok": "count(*) FILTER (status = 'ok')",
    "errors": "count(*) FILTER (status = 'error')",
    "attempts": "coalesce(sum(attempts), 0)",
    "cache_hits": "coalesce(sum(cache_hits), 0)",
    "prompt_tokens": "coalesce(sum(prompt_tokens), 0)",
    "completion_tokens": "coalesce(sum(completion_tokens), 0)",
    "cost_usd": "sum(cost_usd)",
    "priced_calls": "count(cost_usd)",
    "p50": "quantile_cont(latency_s, 0.5)",
    "p90": "quantile_cont(latency_s, 0.9)",
    "p99": "quantile_cont(latency_s, 0.99)",
    "mean": "avg(latency_s)",
    "first_call": "min(started_at)",
    "last_call": "max(finished_at)",
}
Query = Callable[[str, list[Any] | None], list[tuple]]  # a store's query


def summarize_calls(run_dir: str | Path, stage: str | None = None) -> dict[str, Any]:
    """Calls, errors by kind, cache hits, tokens, cost and latency percentiles."""
    with Store.open(run_dir, read_only=True) as store, store.snapshot():  # figures that add up while a run writes
        summary = summarize_query(store.query, stage)
        summary["pending"] = pending_calls(store)
        summary["batches"] = batch_counts(store)
        return summary


def batch_counts(store: Store) -> dict[str, int] | None:
    """Provider batches (batch mode) and the calls they answered, or None when the run used none."""
    [(batches, downloaded, calls)] = store.query(
        "SELECT count(*), count(downloaded_at), (SELECT count(batch_id) FROM llm_calls) FROM llm_batches"
    )
    return {"batches": batches, "downloaded": downloaded, "calls": calls} if batches else None


def pending_calls(store: Store) -> dict[str, int] | None:
    """Calls with attempts sent and no answer recorded: on the wire now (a running run), or left by a
    killed one (the next command that calls the LLM on this folder counts them as interrupted)."""
    [(live, live_attempts, left, left_attempts)] = store.query(
        "SELECT count(*) FILTER (r.status = 'running'), coalesce(sum(p.attempts) FILTER (r.status = 'running'), 0), "
        "count(*) FILTER (r.status IS DISTINCT FROM 'running'), "
        "coalesce(sum(p.attempts) FILTER (r.status IS DISTINCT FROM 'running'), 0) "
        "FROM llm_pending p LEFT JOIN runs r USING (run_id)"
    )
    if not (live or left):
        return None
    return {"on_the_wire": live, "on_the_wire_attempts": live_attempts, "left": left, "left_attempts": left_attempts}


def call_totals(query: Query, stage: str | None = None) -> dict[str, Any]:
    """Every figure of TOTALS over the whole call log, or over one stage's calls."""
    where, args = ("WHERE stage = ?", [stage]) if stage else ("", [])
    row = query(f"SELECT {', '.join(TOTALS.values())} FROM llm_calls {where}", args)[0]
    return dict(zip(TOTALS, row, strict=True))


def summarize_query(query: Query, stage: str | None = None) -> dict[str, Any]:
    """The call summary through a query function."""
    where, args = ("WHERE stage = ?", [stage]) if stage else ("", [])
    totals = call_totals(query, stage)
    errors = dict(
        query(
            f"SELECT error_kind, count(*) FROM llm_calls {where} {'AND' if where else 'WHERE'} status = 'error' "
            "GROUP BY 1 ORDER BY 2 DESC",
            args,
        )
    )
    by_stage = query(
        "SELECT stage, model, count(*), count(*) FILTER (status = 'ok') FROM llm_calls GROUP BY 1, 2 ORDER BY 1, 2",
        None,
    )
    return {
        "calls": totals["calls"], "ok": totals["ok"], "errors": errors, "attempts": totals["attempts"],
        "cache_hits": totals["cache_hits"], "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        "cost_usd": totals["cost_usd"] if totals["priced_calls"] else None, "priced_calls": totals["priced_calls"],
        "latency_s": {key: totals[key] for key in ("mean", "p50", "p90", "p99")},
        "by_stage": [{"stage": s, "model": m, "calls": c, "ok": k} for s, m, c, k in by_stage],
    }  # fmt: skip


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def format_call_summary(summary: dict[str, Any]) -> str:
    lat = summary["latency_s"]
    errors = ", ".join(f"{kind}={n}" for kind, n in summary["errors"].items()) or "none"
    cost = "unknown (no price for these models)" if summary["cost_usd"] is None else f"${summary['cost_usd']:.4f}"
    lines = [
        f"calls: {summary['calls']} ({summary['ok']} ok), HTTP attempts: {summary['attempts']}, "
        f"cache hits: {summary['cache_hits']}",
        f"errors: {errors}",
        f"tokens: {summary['prompt_tokens']} prompt + {summary['completion_tokens']} completion; cost: {cost}",
        f"latency: mean {_seconds(lat['mean'])}, p50 {_seconds(lat['p50'])}, p90 {_seconds(lat['p90'])}, "
        f"p99 {_seconds(lat['p99'])}",
    ]
    for row in summary["by_stage"]:
        lines.append(f"  stage {row['stage']!r} model {row['model']!r}: {row['calls']} calls, {row['ok']} ok")
    if summary.get("batches"):
        batches = summary["batches"]
        lines.append(
            f"batch API: {batches['batches']} batches ({batches['downloaded']} downloaded; the rest are followed "
            f"by the next run), {batches['calls']} calls answered by a batch"
        )
    pending = summary.get("pending") or {}
    if pending.get("on_the_wire"):
        lines.append(
            f"on the wire now: {pending['on_the_wire']} calls ({pending['on_the_wire_attempts']} attempts sent)"
        )
    if pending.get("left"):
        lines.append(
            f"left on the wire by a killed run, not yet counted above (the next command that calls the LLM on "
            f"this run folder counts them as interrupted): {pending['left']} calls, {pending['left_attempts']} attempts"
        )
    return "\n".join(lines)
