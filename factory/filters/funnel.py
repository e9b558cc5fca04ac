"""What a filter run did: per filter kept / dropped by path and by reason, and the funnel.

Filters judge every row independently; the funnel's "left" column is the rows
kept by this filter and all filters above it (config order), which is what the
`curation` view keeps once the last filter is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..export.options import ExportOptions
from ..export.selection import kept_counts
from ..store import Store
from .sql import ID_SET_SQL, REASON_GROUP_SQL, quote

if TYPE_CHECKING:
    from .runner import FilterRun


@dataclass
class FilterOutcome:
    name: str
    kind: str
    position: int
    mode: str  # why it ran as it did: new | changed | new rows | new rollouts | incremental | unchanged
    judged: int  # verdicts written by this run
    seconds: float
    kept: int = 0
    dropped: int = 0
    left: int = 0  # rows kept by this filter and every filter above it
    kept_by_source: dict[str, int] = field(default_factory=dict)
    dropped_by_source: dict[str, int] = field(default_factory=dict)
    drop_reasons: dict[str, int] = field(default_factory=dict)  # reason category -> rows dropped
    notes: dict[str, int] = field(default_factory=dict)  # remark category on kept rows (flags, upsampling) -> rows


@dataclass
class FilterFunnel:
    total: int
    by_source: dict[str, int]
    filters: list[FilterOutcome]
    removed: dict[str, int]  # filter gone from the config -> verdicts deleted
    kept: int  # what the export holds: verified and no filter dropped it (export.selection.kept_counts)
    kept_by_source: dict[str, int]
    weight: float  # sum of the kept rows' weights (the effective size after upsampling)
    splits: dict[str, int]  # kept trajectories per split, as the export splits them at its default options
    missing_rollouts: list[str] = field(default_factory=list)  # per pass_rate filter lacking rollouts: counts, command
    unverified: int = 0  # rows the verifier failed: filters judge them, the export never writes them


def build_funnel(
    store: Store, runs: list["FilterRun"], removed: dict[str, int], missing_rollouts: list[str] | None = None
) -> FilterFunnel:
    by_source = dict(store.query("SELECT coalesce(source, '?'), count(*) FROM trajectories GROUP BY 1 ORDER BY 1"))
    outcomes = {
        run.name: FilterOutcome(run.name, run.kind, run.position, run.mode, run.judged, run.seconds) for run in runs
    }
    count_verdicts(store, outcomes, by_source)
    count_left(store, outcomes, sum(by_source.values()))
    kept_by_source, weight, splits, unverified = final_counts(store)
    return FilterFunnel(
        total=sum(by_source.values()), by_source=by_source, filters=sorted(outcomes.values(), key=lambda o: o.position),
        removed=removed, kept=sum(kept_by_source.values()), kept_by_source=kept_by_source, weight=weight,
        splits=splits, missing_rollouts=missing_rollouts or [], unverified=unverified,
    )  # fmt: skip


def count_verdicts(store: Store, outcomes: dict[str, FilterOutcome], by_source: dict[str, int]) -> None:
    """Kept / dropped by source and by reason category, per filter.

    Only the verdicts that say something (drops, and kept rows with a note) are joined to their
    trajectory's source. A filter holding one verdict per current trajectory (the same count and id-hash
    sum as the trajectories, which every run leaves: see runner.in_sync) kept the rest of each source;
    a filter in any other state has all its verdicts joined and counted. At 1M rows and 8 filters this
    joins ~2.5M verdicts instead of 8M.
    """
    whole = store.query(f"SELECT {ID_SET_SQL} FROM trajectories")[0]
    covered = {
        name
        for name, n, id_sum in store.query(f"SELECT filter, {ID_SET_SQL} FROM filter_verdicts GROUP BY filter")
        if (n, id_sum) == whole
    }
    in_full = f"v.filter NOT IN ({', '.join(quote(name) for name in sorted(covered))})" if covered else "true"
    # Grouped by the reason itself first: the category's regular expression then runs once per distinct
    # reason instead of once per verdict.
    rows = store.query(f"""
        SELECT filter, source, keep, {REASON_GROUP_SQL.format("reason")}, sum(n)::BIGINT FROM (
            SELECT v.filter, coalesce(t.source, '?') AS source, v.keep, v.reason, count(*) AS n
            FROM filter_verdicts v LEFT JOIN trajectories t USING (trajectory_id)
            WHERE NOT v.keep OR v.reason IS NOT NULL OR {in_full} GROUP BY ALL)
        GROUP BY ALL""")
    for name, source, keep, category, n in rows:
        outcome = outcomes.get(name)
        if outcome is None:
            continue
        if category is not None:
            found = outcome.notes if keep else outcome.drop_reasons
            found[category] = found.get(category, 0) + n
        if not keep or name not in covered:
            side = outcome.kept_by_source if keep else outcome.dropped_by_source
            side[source] = side.get(source, 0) + n
    for outcome in outcomes.values():
        if outcome.name in covered:
            left = {s: n - outcome.dropped_by_source.get(s, 0) for s, n in by_source.items()}
            outcome.kept_by_source = {s: n for s, n in left.items() if n}
        outcome.kept = sum(outcome.kept_by_source.values())
        outcome.dropped = sum(outcome.dropped_by_source.values())


def count_left(store: Store, outcomes: dict[str, FilterOutcome], total: int) -> None:
    """Rows surviving each prefix of the config: total minus rows first dropped at or above it."""
    first_drops = dict(
        store.query("""
        SELECT first_drop, count(*) FROM (
            SELECT min(c.position) AS first_drop
            FROM filter_verdicts v JOIN filter_configs c USING (filter)
            WHERE NOT v.keep GROUP BY v.trajectory_id)
        GROUP BY 1""")
    )
    dropped_so_far = 0
    for outcome in sorted(outcomes.values(), key=lambda o: o.position):
        dropped_so_far += first_drops.get(outcome.position, 0)
        outcome.left = total - dropped_so_far


def final_counts(store: Store) -> tuple[dict[str, int], float, dict[str, int], int]:
    """What the export would hold (its own selection: verified, no filter dropped it), and the unverified rows.

    Splits are the export's at its default options: a split filter's names, else train/validation by hash."""
    kept = kept_counts(store, ExportOptions())
    return kept.by_source, kept.kept_weight, kept.split_trajectories, kept.unverified


def format_funnel(funnel: FilterFunnel) -> str:
    """The funnel as text: one line per filter, then where the drops went, then what is left."""
    lines = [f"filters over {funnel.total} trajectories ({sources_text(funnel.by_source)})"]
    width = max([18, *(len(o.name) for o in funnel.filters)])  # names are never cut: they are what users grep
    lines.append(
        f"{'#':>2}  {'filter':<{width}} {'kind':<12} {'run':<13} {'judged':>8} {'kept':>8} {'dropped':>8} "
        f"{'left':>8} {'secs':>7}"
    )
    for o in funnel.filters:
        lines.append(
            f"{o.position:>2}  {o.name:<{width}} {o.kind:<12} {o.mode:<13} {o.judged:>8} {o.kept:>8} "
            f"{o.dropped:>8} {o.left:>8} {o.seconds:>7.2f}"
        )
        if o.dropped:
            lines.append(
                f"      dropped by source: {sources_text(o.dropped_by_source)}; "
                f"by reason: {counts_text(o.drop_reasons)}"
            )
        if o.notes:
            lines.append(f"      kept with a note: {counts_text(o.notes)}")
    for name, n in funnel.removed.items():
        lines.append(f"removed from the config: {name} ({n} verdicts deleted)")
    for line in funnel.missing_rollouts:
        lines.append(f"missing rollouts: {line}")
    splits = ", ".join(f"{name} {n}" for name, n in sorted(funnel.splits.items()))
    unverified = f"; not verified {funnel.unverified} (never exported)" if funnel.unverified else ""
    lines.append(
        f"kept {funnel.kept} of {funnel.total} ({sources_text(funnel.kept_by_source)}){unverified}; "
        f"weighted size {funnel.weight:g}; split: {splits or 'none'}"
    )
    return "\n".join(lines)


def sources_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{source} {n}" for source, n in sorted(counts.items())) or "none"


def counts_text(counts: dict[str, int], limit: int = 6) -> str:
    items = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{category} {n}" for category, n in items[:limit])
    return shown + (f", ... {len(items) - limit} more" if len(items) > limit else "")
