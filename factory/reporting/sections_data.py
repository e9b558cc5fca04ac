"""Report sections about the data: overview, funnels, filters, trajectory shape, errors, pass rates."""

from __future__ import annotations

from typing import Any

from ..export.options import ExportOptions
from ..export.selection import KeptCounts
from .data_paths import DROP_REASONS_SHOWN
from .page import as_cost, as_float, as_int, as_pct, as_text, cards, empty, panel, section, table
from .sql import Bin
from .svg import COLORS, bar_chart, funnel_chart, histogram_chart

FUNNEL_TITLES = {"refine": "AgentRefine (refine)", "coa": "Chain-of-Agents (coa)", "import": "Imported logs"}

# Table columns: (header, key in the row, formatter).
RUNS = [
    ("run id", "run_id", as_text),
    ("command", "command", as_text),
    ("status", "status", as_text),
    ("started", "started_at", as_text),
    ("finished", "finished_at", as_text),
    ("took", "duration", as_text),
]
SOURCES = [
    ("source", "source", as_text),
    ("trajectories", "trajectories", as_int),
    ("verified", "verified", as_int),
    ("correct", "correct", as_int),
    ("turns", "turns", as_int),
]
FUNNEL = [("stage", "stage", as_text), ("count", "n", as_int), ("of first", "share", as_pct)]
FILTERS = [
    ("filter", "filter", as_text),
    ("kind", "kind", as_text),
    ("judged", "judged", as_int),
    ("passed", "kept", as_int),
    ("dropped", "dropped", as_int),
    ("mean weight", "mean_weight", as_float),
]
KEPT = [
    ("trajectories", "trajectories", as_int),
    ("verified", "verified", as_int),
    ("dropped by filters", "dropped", as_int),
    ("not verified", "unverified", as_int),
    ("kept (exported)", "kept", as_int),
    ("kept weight", "kept_weight", as_float),
]
SPLITS = [("split", "split", as_text), ("trajectories", "trajectories", as_int), ("rows", "rows", as_int)]
DROPS = [
    ("filter", "filter", as_text),
    ("reason", "reason", as_text),
    ("dropped", "dropped", as_int),
    ("example", "example", as_text),
]
SHAPE = [
    ("source", "source", as_text),
    ("trajectories", "trajectories", as_int),
    ("turns mean", "turns_mean", as_float),
    ("median", "turns_median", as_float),
    ("max", "turns_max", as_int),
    ("tool calls mean", "calls_mean", as_float),
    ("median", "calls_median", as_float),
    ("max", "calls_max", as_int),
]
BINS = [("range", "range", as_text), ("trajectories", "n", as_int)]
REFINE_TOTALS = [
    ("trajectories", "trajectories", as_int),
    ("mistakes", "errors", as_int),
    ("corrections", "corrections", as_int),
    ("with a correction", "corrected_trajectories", as_int),
]
ERROR_TYPES = [("error type", "type", as_text), ("mistakes", "errors", as_int)]
RULES = [("rule", "rule", as_text), ("failures", "failures", as_int)]
COA_FAILURES = [
    ("source", "source", as_text),
    ("rule or status", "rule", as_text),
    ("trajectories", "trajectories", as_int),
]
COA_TOOLS = [
    ("trajectories", "trajectories", as_int),
    ("tool calls", "tool_calls", as_int),
    ("tool failures", "tool_failures", as_int),
    ("re-plans", "replans", as_int),
    ("poor reflections", "poor_reflections", as_int),
]
PASS_RATES = [
    ("model", "model", as_text),
    ("tasks", "tasks", as_int),
    ("scored samples", "scored", as_int),
    ("unscored", "unscored", as_int),
    ("mean pass rate", "mean_rate", as_pct),
    ("never solved", "never_solved", as_int),
    ("always solved", "always_solved", as_int),
]


def overview(head: dict[str, Any], calls: dict[str, Any], kept: KeptCounts) -> str:
    tiles = [
        ("trajectories", as_int(kept.trajectories)),
        ("verified", as_int(kept.verified)),
        ("kept (exported)", f"{kept.kept:,} / {kept.trajectories:,}"),
    ]
    tiles += [
        ("LLM calls", as_int(calls["calls"])),
        ("LLM errors", as_int(calls["errors"])),
        ("tokens", as_int(calls["prompt_tokens"] + calls["completion_tokens"])),
        ("cost", as_cost(calls["cost_usd"])),
    ]
    runs = table(RUNS, head["runs"], "runs") if head["runs"] else empty("no runs recorded")
    sources = table(SOURCES, head["by_source"], "sources") if head["by_source"] else empty("no trajectories yet")
    span = f"LLM calls from {as_text(calls['first_call'])} to {as_text(calls['last_call'])}." if calls["calls"] else ""
    return section(
        "overview",
        "Overview",
        span or "Totals of the run store.",
        [cards(tiles), f'<div class="pair"><div class="data">{runs}</div><div class="data">{sources}</div></div>'],
    )


def funnels(
    all_funnels: dict[str, dict[str, int]], filtered: dict[str, Any], kept: KeptCounts, options: ExportOptions
) -> str:
    parts = []
    for path, funnel in all_funnels.items():
        stages = [(name.replace("_", " "), n) for name, n in funnel.items()]
        first = stages[0][1]
        rows = [{"stage": s, "n": n, "share": n / first if first else None} for s, n in stages]
        chart = funnel_chart(f"funnel-{path}", stages)
        parts.append(panel(FUNNEL_TITLES[path], chart, table(FUNNEL, rows, f"funnel-{path}")))
    if not parts:
        parts.append(empty("no refine, coa or imported trajectories yet"))
    parts += [_filter_panels(filtered), _kept_panel(kept, options)]
    return section("funnel", "Funnels and filter drops",
                   "How many items survive each stage of each path, what the curation filters dropped and why, "
                   "and what `factory export` writes.", parts)  # fmt: skip


def _kept_panel(kept: KeptCounts, options: ExportOptions) -> str:
    """The export's own counts (export.selection.kept_counts): kept = verified and no filter dropped it."""
    totals = {"trajectories": kept.trajectories, "verified": kept.verified, "dropped": kept.dropped,
              "unverified": kept.unverified, "kept": kept.kept, "kept_weight": kept.kept_weight}  # fmt: skip
    splits = [
        {"split": name, "trajectories": kept.split_trajectories[name], "rows": rows} for name, rows in kept.rows.items()
    ]
    by_split = table(SPLITS, splits, "splits", f"By split ({_split_rule(options)})") if splits else ""
    caption = "Kept: verified and not dropped by a filter (what the export holds)"
    data = table(KEPT, [totals], "kept", caption) + (by_split or empty("nothing kept"))
    return f'<div class="panel"><h3>What the export holds</h3><div class="data">{data}</div></div>'


def _split_rule(options: ExportOptions) -> str:
    repeat = "; a row of weight k > 1 written floor(k) times" if options.upsample == "repeat" else ""
    return f"a split filter's split, else {options.validation:.0%} of task groups by hash to validation{repeat}"


def _filter_panels(filtered: dict[str, Any]) -> str:
    if not filtered["by_filter"]:
        return '<div class="panel"><h3>Filters</h3>' + empty("no filter verdicts (filters not run yet)") + "</div>"
    chart = bar_chart("filter-drops", [(r["filter"], r["dropped"]) for r in filtered["by_filter"]], color=COLORS[3])
    out = panel("Drops by filter", chart, table(FILTERS, filtered["by_filter"], "filters", "Verdicts per filter"))
    if filtered["drops"]:
        reasons = [(f"{r['filter']}: {r['reason']}", r["dropped"]) for r in filtered["drops"]]
        chart = bar_chart("drop-reasons", reasons, color=COLORS[3])
        title = "Drops by filter and reason" + (
            f" (the {DROP_REASONS_SHOWN} most frequent)" if len(reasons) == DROP_REASONS_SHOWN else ""
        )
        out += panel(title, chart, table(DROPS, filtered["drops"], "drop-reasons"))
    return out


def shape(data: dict[str, Any]) -> str:
    if not data["per_source"]:
        return section("shape", "Turns and tool calls", "", [empty("no trajectories with turns yet")])
    turns = panel(
        "Turns per trajectory",
        histogram_chart("turns", data["turns"], "turns"),
        table(SHAPE, data["per_source"], "shape"),
    )
    calls = panel(
        "Tool calls per trajectory (refine: actions)",
        histogram_chart("tool-calls", data["tool_calls"], "tool calls", COLORS[1]),
        _bins_table(data["tool_calls"], "tool-calls"),
    )
    return section(
        "shape",
        "Turns and tool calls",
        "Over trajectories that have turns; a refine action counts as one tool call.",
        [turns, calls],
    )


def _bins_table(bins: list[Bin], name: str) -> str:
    return table(BINS, [{"range": b.label, "n": b.count} for b in bins if b.count], name)


def errors(data: dict[str, Any]) -> str:
    parts = _refine_error_panels(data) + _coa_error_panels(data)
    if not parts:
        parts.append(
            empty(
                "no player mistakes or lost coa tasks recorded (failed scripts, calls and filter drops: see Failures)"
            )
        )
    return section("errors", "Errors and corrections",
                   "Refine: the player's mistakes and their corrections. Chain-of-Agents: tasks lost by grammar rule "
                   "or run status, and tool failures.", parts)  # fmt: skip


def _refine_error_panels(data: dict[str, Any]) -> list[str]:
    parts = []
    if data["refine_totals"]["trajectories"]:
        types = [(r["type"], r["errors"]) for r in data["refine_types"]]
        chart = bar_chart("refine-errors", types, color=COLORS[3]) if types else empty("no mistakes recorded")
        tables = table(REFINE_TOTALS, [data["refine_totals"]], "refine-errors") + table(
            ERROR_TYPES, data["refine_types"], "refine-error-types"
        )
        parts.append(panel("Refine: mistakes by type", chart, tables))
        chart = histogram_chart("corrections", data["corrections"], "corrections", COLORS[2])
        tables = _bins_table(data["corrections"], "corrections")
        parts.append(panel("Refine: corrections per trajectory", chart, tables))
    if data["verifier"]:
        chart = bar_chart("verifier-rules", [(r["rule"], r["failures"]) for r in data["verifier"]])
        parts.append(panel("Refine: verifier failures by rule (every attempt)", chart,
                           table(RULES, data["verifier"], "verifier-rules")))  # fmt: skip
    return parts


def _coa_error_panels(data: dict[str, Any]) -> list[str]:
    parts = []
    if data["coa_failures"]:
        rules = [(f"{r['source']}: {r['rule']}", r["trajectories"]) for r in data["coa_failures"]]
        chart = bar_chart("coa-failures", rules, color=COLORS[3])
        parts.append(
            panel("Chain-of-Agents: failures by rule", chart, table(COA_FAILURES, data["coa_failures"], "coa-failures"))
        )
    if data["coa_totals"]["trajectories"]:
        tools = [(r["tool"], r["calls"]) for r in data["tools"]]
        chart = bar_chart("tool-types", tools, color=COLORS[1]) if tools else empty("no tool calls")
        parts.append(panel("Chain-of-Agents: tool calls by tool, and failures", chart,
                           table(COA_TOOLS, [data["coa_totals"]], "coa-tools")))  # fmt: skip
    return parts


def pass_rates(data: dict[str, Any]) -> str:
    if not data["per_model"]:
        return section("pass-rate", "Pass rates", "", [empty("no rollouts (pass-rate filter not run)")])
    chart = histogram_chart("pass-rate", data["histogram"], "pass rate per task and model", COLORS[2])
    return section(
        "pass-rate",
        "Pass rates",
        "Fraction of a model's scored rollouts judged correct, per task (the `rollouts` table); "
        "a rollout whose request failed or whose check was undecided is unscored.",
        [panel("Pass rate per task", chart, table(PASS_RATES, data["per_model"], "pass-rate"))],
    )
