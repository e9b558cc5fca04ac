"""The report's numbers about the data: header, funnels, filters, trajectory shape, errors, pass rates.

Every number is a DuckDB aggregate; Python only names the columns.
"""

from __future__ import annotations

from typing import Any

from ..filters.sql import REASON_GROUP_SQL
from ..store import Store
from .sql import dict_rows, float_histogram, int_histogram

DROP_REASONS_SHOWN = 40  # reason categories (as `factory filter` groups them) shown, most frequent first

# A row whose stats is not valid JSON counts as having no stats, instead of failing the whole report.
STATS = "CASE WHEN json_valid(stats) THEN stats END"


def stat(name: str) -> str:
    """One integer field of a trajectory's stats; NULL when absent or not a number."""
    return f"TRY_CAST(json_extract_string({STATS}, '$.{name}') AS BIGINT)"


# Actions a trajectory takes in its environment: a refine step is one action, a coa tool call one call.
TOOL_CALLS_SQL = f"CASE WHEN source = 'refine' THEN {stat('assistant_turns')} ELSE {stat('tool_calls')} END"


def stat_object_totals(store: Store, field: str, sources: str, names: str) -> list[dict[str, Any]]:
    """Sums over trajectories of a {name: count} object in stats (errors_by_type, tool_calls_by_type)."""
    return dict_rows(
        store,
        f"SELECT e.key, coalesce(sum(TRY_CAST(e.value AS BIGINT)), 0) FROM trajectories t, json_each({STATS}, "
        f"'$.{field}') e WHERE t.source IN ({sources}) AND e.key IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1",
        names,
    )


def header(store: Store) -> dict[str, Any]:
    runs = dict_rows(
        store,
        "SELECT run_id, command, status, started_at, finished_at, finished_at - started_at FROM runs "
        "ORDER BY started_at, run_id",
        "run_id command status started_at finished_at duration",
    )
    by_source = dict_rows(
        store,
        "SELECT source, count(*), count(*) FILTER (verified), count(*) FILTER (correct), "
        "coalesce(sum(n_turns), 0) FROM trajectories GROUP BY 1 ORDER BY 1",
        "source trajectories verified correct turns",
    )
    return {"runs": runs, "by_source": by_source}


def filters(store: Store) -> dict[str, Any]:
    by_filter = dict_rows(
        store,
        """
        SELECT v.filter, any_value(c.kind), count(*), count(*) FILTER (keep), count(*) FILTER (NOT keep),
               avg(weight)
        FROM filter_verdicts v LEFT JOIN filter_configs c USING (filter)
        GROUP BY v.filter ORDER BY min(c.position) NULLS LAST, v.filter
        """,
        "filter kind judged kept dropped mean_weight",
    )
    drops = dict_rows(
        store,
        f"SELECT filter, coalesce({REASON_GROUP_SQL.format('reason')}, '(no reason)'), count(*), min(reason) "
        f"FROM filter_verdicts WHERE NOT keep GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT {DROP_REASONS_SHOWN}",
        "filter reason dropped example",
    )
    return {"by_filter": by_filter, "drops": drops}


def shape(store: Store) -> dict[str, Any]:
    """Turns and tool calls (refine: actions) per trajectory, over trajectories that have turns."""
    per_source = dict_rows(
        store,
        f"""
        SELECT source, count(*), avg(n_turns), median(n_turns), max(n_turns),
               avg({TOOL_CALLS_SQL}), median({TOOL_CALLS_SQL}), max({TOOL_CALLS_SQL})
        FROM trajectories WHERE n_turns IS NOT NULL GROUP BY 1 ORDER BY 1
        """,
        "source trajectories turns_mean turns_median turns_max calls_mean calls_median calls_max",
    )
    return {
        "per_source": per_source,
        "turns": int_histogram(store, "SELECT n_turns AS x FROM trajectories"),
        "tool_calls": int_histogram(store, f"SELECT {TOOL_CALLS_SQL} AS x FROM trajectories WHERE n_turns IS NOT NULL"),
    }


def errors(store: Store) -> dict[str, Any]:
    """Refine mistakes and their corrections; coa grammar/run failures and tool failures."""
    refine_types = stat_object_totals(store, "errors_by_type", "'refine'", "type errors")
    (refine_totals,) = dict_rows(
        store,
        "SELECT count(*), coalesce(sum(n_errors), 0), coalesce(sum(n_corrections), 0), "
        "count(*) FILTER (n_corrections > 0) FROM trajectories WHERE source = 'refine' AND n_turns IS NOT NULL",
        "trajectories errors corrections corrected_trajectories",
    )
    verifier = dict_rows(
        store, "SELECT rule, count(*) FROM verdicts WHERE NOT ok GROUP BY 1 ORDER BY 2 DESC, 1", "rule failures"
    )
    coa_failures = dict_rows(
        store,
        "SELECT source, coalesce(rule, '(none)'), count(*) FROM trajectories "
        "WHERE source IN ('coa', 'import') AND NOT verified GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
        "source rule trajectories",
    )
    tools = stat_object_totals(store, "tool_calls_by_type", "'coa', 'import'", "tool calls")
    (coa_totals,) = dict_rows(
        store,
        f"SELECT count(*), coalesce(sum({stat('tool_calls')}), 0), coalesce(sum({stat('tool_failures')}), 0), "
        f"coalesce(sum({stat('replans')}), 0), coalesce(sum({stat('poor_reflections')}), 0) "
        "FROM trajectories WHERE source IN ('coa', 'import') AND verified",
        "trajectories tool_calls tool_failures replans poor_reflections",
    )
    corrections = int_histogram(
        store, "SELECT n_corrections AS x FROM trajectories WHERE source = 'refine' AND n_turns IS NOT NULL"
    )
    return {"refine_types": refine_types, "refine_totals": refine_totals, "verifier": verifier,
            "corrections": corrections, "coa_failures": coa_failures, "tools": tools,
            "coa_totals": coa_totals}  # fmt: skip


def pass_rates(store: Store) -> dict[str, Any]:
    """Per task and model, the fraction of scored rollouts judged correct (an unscored one has correct NULL)."""
    per_task = (
        "SELECT task_id, model, avg(CAST(correct AS INTEGER)) AS rate, count(correct) AS scored, "
        "count(*) - count(correct) AS unscored FROM rollouts GROUP BY 1, 2"
    )
    per_model = dict_rows(
        store,
        f"""
        SELECT model, count(*) FILTER (scored > 0), sum(scored), sum(unscored), avg(rate),
               count(*) FILTER (rate = 0), count(*) FILTER (rate = 1)
        FROM ({per_task}) GROUP BY 1 ORDER BY 1
        """,
        "model tasks scored unscored mean_rate never_solved always_solved",
    )
    histogram = float_histogram(store, f"SELECT rate AS x FROM ({per_task})", bins=10, lo=0.0, hi=1.0)
    return {"per_model": per_model, "histogram": histogram}
