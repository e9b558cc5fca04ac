"""Which trajectories an export holds, with what weight, in which split (SQL over the store).

A row is exportable when it is verified and no filter dropped it: trajectories
LEFT JOIN the `curation` view, so a trajectory no filter has judged yet counts
as kept with weight 1. The split is the one a split filter wrote; without one,
a hash of the row's task group (task, else script, else persona) puts whole
groups in validation, so no task is in both splits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..store import Store
from ..store.db import STORE_FILENAME, refuse_old_store
from ..store.migrations import MIGRATIONS
from .options import ExportError, ExportOptions

SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")  # what the Hub and `datasets` accept as a split name
# The trajectory columns the formats read (not all: `conversations` there is the stored text, not the export's).
# `tools`: set on imported native trajectories (their calls live in the turns): only the native formats hold them.
COLUMNS = (
    "t.trajectory_id, t.source, t.task_id, t.script_id, t.turns, t.prompt, t.completion, t.observation_spans, t.tools"
)
GROUP_KEY = "coalesce(t.task_id, t.script_id, t.persona_id, t.trajectory_id)"
HASH_BUCKETS = 1_000_000


def open_store(run_dir: str | Path) -> Store:
    """The run's store for reading; an older run folder is first brought up to date."""
    path = Path(run_dir) / STORE_FILENAME
    refuse_old_store(path)
    if not path.is_file():
        raise ExportError(f"{run_dir}: not a run folder (no {STORE_FILENAME}); run factory refine or coa first")
    store = Store(path, read_only=True)
    if len(store.applied_migrations()) < len(MIGRATIONS):
        store.close()
        store = Store(path)  # read-write applies the missing migrations (e.g. the curation view)
    keep_trajectories_on_the_probe_side(store)
    return store


def keep_trajectories_on_the_probe_side(store: Store) -> None:
    """Bound the export's memory: in `trajectories LEFT JOIN curation` the hash table must hold curation.

    DuckDB's build-side optimizer swaps the sides when it estimates the filtered trajectories as the
    smaller input, and then every exported row's turns text sits in the hash table (1.7 GB at 400k rows
    instead of 0.4 GB). This connection is the export's own, so the setting touches nothing else.
    """
    store.reader.isolate()  # the setting is a DuckDB instance's: the export's own, touching no other store
    try:
        store.duck_execute("SET disabled_optimizers = 'build_side_probe_side'")
    except duckdb.Error:  # an optimizer of another name in another DuckDB version: only memory is at stake
        pass


BUCKET = f"md5_number({GROUP_KEY}) % {HASH_BUCKETS}"
SMALL_RUN_ROWS = 10_000  # past this many kept rows the share fills both splits; the cut is not searched for


def hashed_split_sql(validation: float) -> str:
    """'validation' or 'train' by the group's hash bucket against the cut `b.cut` (split_cut_sql)."""
    if round(validation * HASH_BUCKETS) == 0:
        return "'train'"
    return f"CASE WHEN {BUCKET} < b.cut THEN 'validation' ELSE 'train' END"


def split_cut_sql(validation: float) -> str:
    """One row, `cut`: groups whose bucket is under it go to validation.

    The cut is the share (`validation` of the buckets), except in a small run where that would
    leave a split empty (3 groups at 0.34: no validation group 29% of the time): then the group
    nearest the threshold crosses (the lowest bucket joins validation, or the highest stays in
    train) and a lone group stays in train. Whole groups only, so no task is in both splits. It
    reads at most SMALL_RUN_ROWS + 1 rows, so a large export pays almost nothing for it.
    """
    threshold = round(validation * HASH_BUCKETS)
    return f"""SELECT CASE WHEN count(*) > {SMALL_RUN_ROWS} THEN {threshold}
                           WHEN min(bucket) = max(bucket) THEN min(bucket)
                           WHEN min(bucket) >= {threshold} THEN min(bucket) + 1
                           WHEN max(bucket) < {threshold} THEN max(bucket)
                           ELSE {threshold} END AS cut
               FROM (SELECT {BUCKET} AS bucket FROM trajectories t LEFT JOIN curation c USING (trajectory_id)
                     WHERE t.verified AND coalesce(c.keep, true) AND c.split IS NULL LIMIT {SMALL_RUN_ROWS + 1})"""


def selection_sql(options: ExportOptions) -> str:
    """Every exported row: the trajectory's columns plus group_key, split and weight."""
    kept = f"""
        SELECT {COLUMNS}, {GROUP_KEY} AS group_key, coalesce(c.weight, 1.0) AS curated_weight,
               coalesce(c.split, {hashed_split_sql(options.validation)}) AS split
        FROM trajectories t LEFT JOIN curation c USING (trajectory_id)
             CROSS JOIN ({split_cut_sql(options.validation)}) b
        WHERE t.verified AND coalesce(c.keep, true)"""
    if options.upsample == "none":
        return f"SELECT *, curated_weight AS weight FROM ({kept})"
    # Repeat a row floor(weight) times and spread the weight over the copies, so the total stays the same.
    return f"""
        SELECT * EXCLUDE (copies, copy_index), curated_weight / copies AS weight FROM (
            SELECT *, unnest(range(copies)) AS copy_index FROM (
                SELECT *, greatest(1, floor(curated_weight))::BIGINT AS copies FROM ({kept})))"""


@dataclass(frozen=True)
class KeptCounts:
    """What an export with these options holds: the one count the export, its card and the report show."""

    trajectories: int  # in the store
    verified: int
    kept: int  # verified and no filter dropped it: the trajectories exported
    kept_weight: float  # sum of the exported rows' weights (upsampling keeps it)
    by_source: dict[str, int]  # kept trajectories per source
    rows: dict[str, int]  # exported rows per split (a repeated row counts once per copy)
    split_trajectories: dict[str, int]  # kept trajectories per split

    @property
    def unverified(self) -> int:
        return self.trajectories - self.verified

    @property
    def dropped(self) -> int:  # verified rows a filter dropped
        return self.verified - self.kept


def kept_counts(store: Store, options: ExportOptions) -> KeptCounts:
    """Counted over `selection_sql` itself, so no other query can disagree with what the export writes."""
    trajectories, verified = store.query("SELECT count(*), count(*) FILTER (verified) FROM trajectories")[0]
    rows = store.query(f"""
        SELECT split, source, count(*), count(DISTINCT trajectory_id), coalesce(sum(weight), 0)
        FROM ({selection_sql(options)}) GROUP BY ALL ORDER BY ALL""")
    by_source: dict[str, int] = {}
    per_split: dict[str, int] = {}
    split_trajectories: dict[str, int] = {}
    for split, source, n_rows, n_trajectories, _ in rows:
        by_source[source] = by_source.get(source, 0) + n_trajectories
        per_split[split] = per_split.get(split, 0) + n_rows
        split_trajectories[split] = split_trajectories.get(split, 0) + n_trajectories
    return KeptCounts(trajectories, verified, sum(by_source.values()), sum(r[4] for r in rows), by_source, per_split,
                      split_trajectories)  # fmt: skip


def split_counts(store: Store, options: ExportOptions) -> dict[str, int]:
    """Rows per split; a one-line error when there is nothing to export or a split name is unusable."""
    counts = kept_counts(store, options).rows
    if not counts:
        raise ExportError(nothing_to_export(store))
    for name in counts:
        if not SPLIT_NAME.match(str(name)):
            raise ExportError(f"curation split {name!r} is not a usable split name (letters, digits, _ and . only)")
    return counts


def nothing_to_export(store: Store) -> str:
    total, verified = store.query("SELECT count(*), count(*) FILTER (verified) FROM trajectories")[0]
    where = store.path.parent
    if total == 0:
        return f"{where}: the run store holds no trajectories; run factory refine or factory coa first"
    if verified == 0:
        return f"{where}: none of the {total} trajectories passed verification; nothing to export"
    reasons = store.query("""
        SELECT v.filter || ': ' || coalesce(v.reason, 'dropped'), count(DISTINCT v.trajectory_id) FROM filter_verdicts v
        JOIN trajectories t USING (trajectory_id) WHERE t.verified AND NOT v.keep
        GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3""")
    named = "; ".join(f"{reason} ({n})" for reason, n in reasons)
    return (
        f"{where}: the filters dropped all {verified} verified trajectories ({named}); "
        f"factory ls {where} --dropped lists them"
    )


def groups_in_several_splits(store: Store, options: ExportOptions) -> int:
    """Task groups found in more than one split (only a curation split can cause this)."""
    sql = f"SELECT group_key FROM ({selection_sql(options)}) GROUP BY 1 HAVING count(DISTINCT split) > 1"
    return store.query(f"SELECT count(*) FROM ({sql})")[0][0]


def unconfirmed_answers(store: Store, options: ExportOptions) -> str | None:
    """A warning when exported task rows (coa, imports) lack a positive correctness check: a run
    without the correctness filter exports wrong answers as training targets. Refine rows have no
    answer to check (the verifier judged their turns) and are not counted."""
    sql = f"""
        SELECT count(*), count(*) FILTER (t.correct IS false), count(*) FILTER (t.correct IS NULL)
        FROM ({selection_sql(options)}) s JOIN trajectories t USING (trajectory_id)
        WHERE t.source <> 'refine'"""
    total, wrong, unchecked = store.query(sql)[0]
    if not wrong and not unchecked:
        return None
    return (
        f"{wrong + unchecked} of {total} exported task rows have no positive correctness check "
        f"(correct=false: {wrong}, unchecked: {unchecked}); filter with `correctness` "
        "(examples/filters.yaml) to keep only checked answers"
    )
