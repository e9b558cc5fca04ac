"""SQL pieces every filter shares: the base view, JSON stats access, text normalisation, scope.

Every filter reads `filter_base t`: the trajectories table plus `stats_json`, the
stats column as JSON, and `stats_fields`, the fields the built-ins read as a typed
struct (both NULL when the stats are not valid JSON, so a bad row is judged on
what it has instead of failing the whole statement).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..records import TrajectoryStats
from .config import FilterSpec

# Stands for "which trajectories to judge" in a compiled statement: TRUE for a full
# recompute, or "not judged yet / rewritten since" for an incremental run.
ROWS = "/*ROWS*/"

# The stats fields the built-ins read (those TrajectoryStats marks `filtered`), with their SQL types. Parsed
# into one struct per row (`stats_fields`): one parse of the JSON per filter, where a json_extract per field
# and per mention parsed it once each.
SQL_TYPES = {int: "BIGINT", bool: "BOOLEAN"}
STATS_FIELDS = {name: SQL_TYPES[kind] for name, kind in TrajectoryStats.filtered_fields().items()}

# try(): stats that are not valid JSON give NULL fields. A field of another type (a string where a number
# belongs) is NULL too: from_json is not strict.
BASE_VIEW_SQL = f"""
CREATE OR REPLACE TEMP VIEW filter_base AS
SELECT t.*, CASE WHEN json_valid(t.stats) THEN CAST(t.stats AS JSON) END AS stats_json,
       try(from_json(t.stats, '{json.dumps(STATS_FIELDS)}')) AS stats_fields
FROM trajectories t
"""

# The part of a reason before " of ", ": " or " (" names its category; the rest is the row's detail.
REASON_GROUP_SQL = r"regexp_replace({0}, '( of |: | \().*$', '')"


# Which trajectories a set of rows covers, as (count, sum of id hashes): equal pairs say the same ids
# (with one row per id). The runner and the funnel (funnel.py) compare these, so both must use this one expression.
ID_SET_SQL = "count(*), sum(hash(trajectory_id))"


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def stat(name: str, sql_type: str = "BIGINT") -> str:
    """One field of the trajectory's stats JSON, NULL when absent or of another type."""
    assert STATS_FIELDS.get(name) == sql_type, f"mark {name} filtered in TrajectoryStats ({sql_type})"
    return f"t.stats_fields.{name}"


def normalised(expr: str) -> str:
    """Lower case, runs of anything but letters and digits to one space: 'What  is X?' -> 'what is x'.

    Text that is already normal (lower-case ASCII words and digits, single spaces, none at either end)
    is passed through: one ASCII match is ~5x cheaper than the Unicode-class replace it would be a no-op for.
    """
    full = rf"trim(regexp_replace(lower({expr}), '[^\p{{L}}\p{{N}}]+', ' ', 'g'))"
    return f"CASE WHEN regexp_matches({expr}, '[^a-z0-9 ]|  |^ | $') THEN {full} ELSE {expr} END"


def scope(spec: FilterSpec) -> str:
    """Which rows the filter judges; the rest are kept with no reason."""
    parts = []
    if spec.sources:
        parts.append(f"t.source IN ({', '.join(quote(s) for s in spec.sources)})")
    if spec.where:
        parts.append(f"coalesce((\n{spec.where}\n), false)")
    return " AND ".join(parts) or "true"


def scoped_base(spec: FilterSpec) -> str:
    """filter_base with `in_scope`, decided before any join so user SQL sees only trajectories columns."""
    return f"(SELECT t.*, {scope(spec)} AS in_scope FROM filter_base t)"


def pending(filter_name: str) -> str:
    """Rows this filter has no verdict for, or whose row was rewritten after its verdict."""
    return (
        "NOT EXISTS (SELECT 1 FROM filter_verdicts v WHERE v.filter = "
        f"{quote(filter_name)} AND v.trajectory_id = t.trajectory_id "
        "AND v.created_at >= coalesce(t.created_at, TIMESTAMP '-infinity'))"
    )


@dataclass
class RowRule:
    """A filter judged one row at a time: SQL expressions over `filter_base t` (and `joins`).

    keep: boolean (NULL counts as drop); reason: why a dropped row was dropped;
    note: a remark on a kept row (a flag, an upsample); weight and split as stored.
    """

    keep: str
    reason: str
    note: str = "NULL"
    weight: str = "1.0"
    split: str = "NULL"
    joins: str = ""
    ctes: str = ""  # WITH ... entries the joins read; may use ROWS to limit themselves to pending rows
    lets: dict[str, str] = field(default_factory=dict)  # t.<name> = expression over t, computed once per row


@dataclass
class Compiled:
    """One filter as SQL: `select` yields (trajectory_id, keep, reason, weight, split)."""

    spec: FilterSpec
    select: str
    setup: list[str] = field(default_factory=list)  # statements `select` needs (temp tables), same transaction
    teardown: list[str] = field(default_factory=list)
    whole_set: bool = False  # a verdict depends on other rows: any new row recomputes all
    reads_rollouts: bool = False  # a verdict depends on `rollouts`: new rollouts recompute all


def row_select(spec: FilterSpec, rule: RowRule) -> str:
    """The verdict query of a row filter; rows outside the scope are kept with no reason."""
    with_clause = f"WITH {rule.ctes}" if rule.ctes else ""
    base = scoped_base(spec)
    if rule.lets:
        lets = ", ".join(f"{expr} AS {name}" for name, expr in rule.lets.items())
        base = f"(SELECT t.*, {lets} FROM {base} t)"
    keep = f"coalesce(({rule.keep}), false)"
    # The keep test is repeated inside the CASE so that DuckDB builds a reason string only for the rows
    # it drops and a note only for those it keeps (CASE evaluates each branch on its own rows).
    return f"""
        {with_clause}
        SELECT t.trajectory_id,
               CASE WHEN t.in_scope THEN {keep} ELSE true END AS keep,
               CASE WHEN NOT t.in_scope THEN NULL WHEN {keep} THEN ({rule.note})::VARCHAR
                    ELSE ({rule.reason})::VARCHAR END AS reason,
               CASE WHEN t.in_scope THEN ({rule.weight})::DOUBLE ELSE 1.0 END AS weight,
               CASE WHEN t.in_scope THEN ({rule.split})::VARCHAR END AS split
        FROM {base} t {rule.joins}
        WHERE {ROWS}"""
