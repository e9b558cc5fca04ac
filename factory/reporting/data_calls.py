"""The report's numbers about LLM calls: tokens and cost, latency, errors (all from `llm_calls`).

The whole-log totals come from factory/llm/call_summary.py, the same query `factory calls` reads; the
per-stage tables, the latency histogram and the error kinds' shares are the report's own."""

from __future__ import annotations

from typing import Any

from ..llm.call_summary import call_totals
from ..store import Store
from .sql import dict_rows, float_histogram

OVERVIEW_FIGURES = (
    "calls",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_hits",
    "first_call",
    "last_call",
)


def totals(store: Store) -> dict[str, Any]:
    """The overview's whole-log figures, from the call log's own totals query (the ones `factory calls` shows)."""
    figures = call_totals(store.query)
    return {key: figures[key] for key in OVERVIEW_FIGURES}


def usage(store: Store) -> list[dict[str, Any]]:
    """Calls, errors, tokens and cost per stage and model (cost stays None where no call was priced)."""
    return dict_rows(
        store,
        """
        SELECT coalesce(stage, '(none)'), coalesce(model, '(none)'), count(*), count(*) FILTER (status = 'error'),
               count(*) FILTER (status = 'error') / count(*), coalesce(sum(prompt_tokens), 0),
               coalesce(sum(completion_tokens), 0), sum(cost_usd), coalesce(sum(cache_hits), 0)
        FROM llm_calls GROUP BY 1, 2 ORDER BY 1, 2
        """,
        "stage model calls errors error_rate prompt_tokens completion_tokens cost_usd cache_hits",
    )


def latency(store: Store) -> dict[str, Any]:
    per_stage = dict_rows(
        store,
        """
        SELECT coalesce(stage, '(none)'), coalesce(model, '(none)'), count(*), avg(latency_s),
               quantile_cont(latency_s, 0.5), quantile_cont(latency_s, 0.9), quantile_cont(latency_s, 0.99),
               max(latency_s)
        FROM llm_calls WHERE latency_s IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
        """,
        "stage model calls mean p50 p90 p99 max",
    )
    histogram = float_histogram(store, "SELECT latency_s AS x FROM llm_calls", bins=20)
    return {"per_stage": per_stage, "histogram": histogram}


def error_kinds(store: Store) -> list[dict[str, Any]]:
    """Failed requests by error_kind, as a count and a share of all requests."""
    return dict_rows(
        store,
        """
        SELECT coalesce(error_kind, '(unknown)'), count(*), count(*) / (SELECT count(*) FROM llm_calls),
               string_agg(DISTINCT coalesce(stage, '(none)'), ', ' ORDER BY coalesce(stage, '(none)'))
        FROM llm_calls WHERE status = 'error' GROUP BY 1 ORDER BY 2 DESC, 1
        """,
        "kind calls share stages",
    )
