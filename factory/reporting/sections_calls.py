"""Report sections about LLM calls: tokens and cost per stage and model, latency, error kinds."""

from __future__ import annotations

from typing import Any

from .page import as_cost, as_int, as_pct, as_seconds, as_text, empty, panel, section, table
from .svg import COLORS, bar_chart, histogram_chart, stacked_bars


def _who(row: dict[str, Any]) -> str:
    return f"{row['stage']} · {row['model']}"


def usage(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return section("usage", "Tokens and cost", "", [empty("no LLM calls logged")])
    cols = [("stage", "stage", as_text), ("model", "model", as_text), ("calls", "calls", as_int),
            ("errors", "errors", as_int), ("error rate", "error_rate", as_pct),
            ("prompt tokens", "prompt_tokens", as_int), ("completion tokens", "completion_tokens", as_int),
            ("cost", "cost_usd", as_cost), ("cache hits", "cache_hits", as_int)]  # fmt: skip
    tokens = stacked_bars(
        "tokens",
        [(_who(r), (r["prompt_tokens"], r["completion_tokens"])) for r in rows],
        ("prompt tokens", "completion tokens"),
    )
    parts = [panel("Tokens per stage and model", tokens, table(cols, rows, "usage"))]
    priced = [(_who(r), r["cost_usd"]) for r in rows if r["cost_usd"] is not None]
    if priced:
        parts.append(panel("Cost per stage and model (USD)",
                           bar_chart("cost", priced, fmt=lambda v: f"${v:,.4f}", color=COLORS[4]), ""))  # fmt: skip
    else:
        parts.append(empty("no call was priced (local or unknown models): cost unknown"))
    return section("usage", "Tokens and cost", "Every request in `llm_calls`, one row per request hash.", parts)


def latency(data: dict[str, Any], kinds: list[dict[str, Any]], total_calls: int) -> str:
    parts = []
    if data["per_stage"]:
        cols = [("stage", "stage", as_text), ("model", "model", as_text), ("calls", "calls", as_int),
                ("mean", "mean", as_seconds), ("p50", "p50", as_seconds), ("p90", "p90", as_seconds),
                ("p99", "p99", as_seconds), ("max", "max", as_seconds)]  # fmt: skip
        chart = histogram_chart("latency", data["histogram"], "latency (s)", COLORS[5])
        parts.append(panel("Latency per request", chart, table(cols, data["per_stage"], "latency")))
    else:
        parts.append(empty("no latencies logged"))
    if kinds:
        cols = [("error kind", "kind", as_text), ("calls", "calls", as_int), ("share of all calls", "share", as_pct),
                ("stages", "stages", as_text)]  # fmt: skip
        chart = bar_chart("error-kinds", [(r["kind"], r["calls"]) for r in kinds], color=COLORS[3])
        parts.append(panel("Failed requests by error kind", chart, table(cols, kinds, "error-kinds")))
    elif total_calls:
        parts.append(empty(f"no failed requests among {total_calls:,} calls"))
    return section(
        "latency",
        "LLM latency and errors",
        "Seconds from request to validated reply, retries included; failures by `error_kind`.",
        parts,
    )
