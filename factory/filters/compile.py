"""A filter spec -> the SQL that writes its verdicts; user SQL is checked against the store first."""

from __future__ import annotations

from typing import Callable

import duckdb

from ..errors import ConfigError
from ..store import Store
from .config import (
    ComplexityFilter,
    CorrectnessFilter,
    DecontaminateFilter,
    DedupFilter,
    FilterSpec,
    GroundedFilter,
    GroundedThoughtsFilter,
    PassRateFilter,
    RedundancyFilter,
    ReflectionFilter,
    SplitFilter,
    SqlFilter,
    TemplateFilter,
    UpsampleFilter,
)
from .decontam import decontam_compiled
from .dedup import dedup_compiled
from .passrate import passrate_rule
from .redundancy import redundancy_rule
from .rules import (
    complexity_rule,
    correctness_rule,
    grounded_rule,
    grounded_thoughts_rule,
    reflection_rule,
    split_rule,
    sql_rule,
    upsample_rule,
)
from .sql import Compiled, RowRule, row_select
from .template import template_compiled

ROW_RULES: dict[type, Callable] = {
    SqlFilter: sql_rule, ComplexityFilter: complexity_rule, ReflectionFilter: reflection_rule,
    CorrectnessFilter: correctness_rule, UpsampleFilter: upsample_rule, SplitFilter: split_rule,
    RedundancyFilter: redundancy_rule, PassRateFilter: passrate_rule, GroundedFilter: grounded_rule,
    GroundedThoughtsFilter: grounded_thoughts_rule,
}  # fmt: skip


def compile_filter(spec: FilterSpec) -> Compiled:
    if isinstance(spec, DedupFilter):
        return dedup_compiled(spec)
    if isinstance(spec, TemplateFilter):
        return template_compiled(spec)
    if isinstance(spec, DecontaminateFilter):
        return decontam_compiled(spec)
    rule: RowRule = ROW_RULES[type(spec)](spec)
    return Compiled(spec=spec, select=row_select(spec, rule), reads_rollouts=isinstance(spec, PassRateFilter))


def check_user_sql(store: Store, spec: FilterSpec, source: str) -> None:
    """A raw predicate (`sql`, `where`) must bind against the store and be true/false, else one line."""
    for field in ("sql", "where"):
        text = getattr(spec, field, None)
        if text is None:
            continue
        where = f"{source}: filter '{spec.name}' field '{field}'"
        sql_type, problem = predicate_type(store, text)
        if problem:
            raise ConfigError(f"{where}: {problem}")
        if sql_type != "BOOLEAN":
            raise ConfigError(f"{where}: must be a true/false predicate, got a {sql_type} ({text.strip()[:60]!r})")


def predicate_type(store: Store, text: str) -> tuple[str | None, str | None]:
    """(the SQL type of the predicate, None), or (None, DuckDB's one-line complaint about it)."""
    query = f"SELECT (\n{text}\n) AS predicate FROM filter_base t"
    try:
        # Parsed before it runs: "x) ; DROP TABLE trajectories; SELECT (1" must not reach execute().
        if len(store.duck.extract_statements(query)) != 1:
            return None, f"one predicate only, not several statements ({text.strip()[:60]!r})"
        return store.query(f"DESCRIBE {query}")[0][1], None
    except duckdb.Error as exc:
        # Keep the message only: the exception's frames would keep the connection alive past close().
        return None, first_line(exc)


def first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__
