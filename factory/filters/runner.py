"""Run a filter config against a run's store: each filter's verdicts written by one SQL statement.

Incremental by design (DESIGN rule 3):
- a filter whose config hash (filter_configs) is unchanged judges only rows it
  has no verdict for, or rows rewritten since their verdict (a newer created_at);
  when aggregates show nothing new (`in_sync`) it does not look at the rows at all;
- a filter whose config changed, or that is new, drops its verdicts and judges every row;
- a filter that depends on the whole set (dedup: a verdict names the first row of a
  group, and a new, rewritten or deleted row can change which row that is) judges
  every row again as soon as any row is new, rewritten or gone;
- pass_rate judges every row again when rollouts newer than its last run exist; it never samples
  them (factory passrate does), and stops before anything is written when none are stored for its
  label, or some are missing under `missing: fail` (filters/passrate.py: rollout_gaps);
- a filter no longer in the config loses its verdicts and its config row.
Each filter's update is one transaction: a killed run leaves every filter either
as it was or fully updated.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..errors import FactoryError
from ..store import Store, utcnow
from ..store.db import STORE_FILENAME
from .compile import check_user_sql, compile_filter
from .config import FilterConfig, PassRateFilter, load_filter_config
from .funnel import FilterFunnel, build_funnel
from .passrate import rollout_gaps
from .sql import BASE_VIEW_SQL, ID_SET_SQL, ROWS, Compiled, pending, quote


@dataclass
class FilterRun:
    name: str
    kind: str
    position: int
    mode: str  # new | changed | new rows | new rollouts | incremental | unchanged
    judged: int  # verdicts written by this run
    seconds: float


def run_filters(
    target: Store | str | Path, config_path: str | Path | None = None, config: FilterConfig | None = None
) -> FilterFunnel:
    """Apply the filter config (a YAML file, or an already loaded `config`) to a run folder or store."""
    if config is None:
        if config_path is None:
            raise FactoryError("run_filters needs a config file or a FilterConfig")
        config = load_filter_config(config_path)
    store, owned = open_target(target)
    try:
        shut_host_files(store)
        runs, removed, gaps = apply_config(store, config)
        return build_funnel(store, runs, removed, gaps)
    finally:
        if owned:
            store.close()


def shut_host_files(store: Store) -> None:
    """A filter config carries SQL (`sql`, `where`) from whoever wrote it: from here on the store's DuckDB
    reads and writes no file but its own (`read_text('/etc/shadow')`, COPY, ATTACH are refused), also for
    any other connection to this store in this process, until its last connection closes (DuckDB cannot
    turn it back on). Filters need no file: they read the store's tables and write verdicts into them."""
    store.execute("SET enable_external_access = false")
    store.execute("SET lock_configuration = true")


def open_target(target: Store | str | Path) -> tuple[Store, bool]:
    if isinstance(target, Store):
        return target, False
    path = Path(target)
    if path.is_dir():
        path = path / STORE_FILENAME
    if not path.exists():
        raise FactoryError(f"no run store at {path} (run a generation command first, or check the folder)")
    return Store(path), True


def apply_config(store: Store, config: FilterConfig) -> tuple[list[FilterRun], dict[str, int], list[str]]:
    """Judge with every filter of the config; (how each ran, verdicts removed, lines on missing rollouts)."""
    store.execute(BASE_VIEW_SQL)
    for spec in config.filters:  # every user predicate is checked before anything is written
        check_user_sql(store, spec, config.source)
    gaps = [rollout_gaps(store, spec, config.source) for spec in config.filters if isinstance(spec, PassRateFilter)]
    compiled = [compile_filter(spec) for spec in config.filters]
    removed = remove_filters(store, [spec.name for spec in config.filters])
    now, rows = utcnow(), rows_fingerprint(store)
    runs = [apply_filter(store, item, position, now, rows) for position, item in enumerate(compiled, 1)]
    return runs, removed, [line for line in gaps if line]


def remove_filters(store: Store, keep: list[str]) -> dict[str, int]:
    """Drop verdicts and config rows of filters that left the config; verdicts removed per filter."""
    names = ", ".join(quote(name) for name in keep)
    with store.transaction() as con:
        counts = con.execute(
            f"SELECT filter, count(*) FROM filter_verdicts WHERE filter NOT IN ({names}) GROUP BY filter"
        ).fetchall()
        stale = con.execute(f"SELECT filter FROM filter_configs WHERE filter NOT IN ({names})").fetchall()
        con.execute(f"DELETE FROM filter_verdicts WHERE filter NOT IN ({names})")
        con.execute(f"DELETE FROM filter_configs WHERE filter NOT IN ({names})")
    removed = {name: 0 for (name,) in stale}
    removed.update(dict(counts))
    return removed


def apply_filter(store: Store, item: Compiled, position: int, now: datetime, rows: tuple) -> FilterRun:
    spec, started = item.spec, time.perf_counter()
    mode = decide_mode(store, item, rows)
    judged = 0
    with store.transaction() as con:
        if mode != "unchanged":
            for statement in item.setup:
                con.execute(statement)
            # filter_verdicts has no key (see migration 0008): the verdicts about to be written are
            # deleted first, which keeps one verdict per (trajectory, filter).
            if mode == "incremental":
                select = item.select.replace(ROWS, pending_rows(con, spec.name))
                con.execute(
                    f"DELETE FROM filter_verdicts WHERE filter = {quote(spec.name)} AND (trajectory_id IN "
                    "(SELECT trajectory_id FROM filter_pending) OR trajectory_id NOT IN "
                    "(SELECT trajectory_id FROM trajectories))"
                )
            else:
                select = item.select.replace(ROWS, "true")
                con.execute("DELETE FROM filter_verdicts WHERE filter = ?", [spec.name])
            judged = con.execute(f"""
                INSERT INTO filter_verdicts
                    (trajectory_id, filter, keep, reason, weight, split, config_hash, created_at)
                SELECT trajectory_id, {quote(spec.name)}, keep, reason, weight, split, {quote(spec.config_hash())},
                       TIMESTAMP '{now.isoformat(sep=" ")}'
                FROM ({select})""").fetchone()[0]
            for statement in item.teardown:
                con.execute(statement)
        con.execute(
            "INSERT OR REPLACE INTO filter_configs VALUES (?, ?, ?, ?, ?, ?)",
            [spec.name, position, spec.kind, json.dumps(spec.model_dump(mode="json")), spec.config_hash(), now],
        )
    return FilterRun(spec.name, spec.kind, position, mode, judged, time.perf_counter() - started)


def pending_rows(con, name: str) -> str:
    """The rows to judge, as a predicate on t: ids in a small temp table, which DuckDB turns into a
    filter on the scan, so the big columns (completion, turns) are read for those rows alone."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE filter_pending AS SELECT trajectory_id FROM trajectories t WHERE {pending(name)}"
    )
    return "t.trajectory_id IN (SELECT trajectory_id FROM filter_pending)"


def decide_mode(store: Store, item: Compiled, rows: tuple) -> str:
    spec = item.spec
    found = store.query("SELECT config_hash, updated_at FROM filter_configs WHERE filter = ?", [spec.name])
    if not found:
        return "new"
    config_hash, updated_at = found[0]
    if config_hash != spec.config_hash():
        return "changed"
    if item.reads_rollouts and store.query("SELECT max(created_at) > ? FROM rollouts", [updated_at])[0][0]:
        return "new rollouts"
    if in_sync(store, spec.name, rows):
        return "unchanged"
    return "new rows" if item.whole_set else "incremental"


def rows_fingerprint(store: Store) -> tuple:
    """(count, sum of id hashes, latest created_at) of trajectories: cheap to compare on every run."""
    return store.query(f"SELECT {ID_SET_SQL}, max(created_at) FROM trajectories")[0]


def in_sync(store: Store, name: str, rows: tuple) -> bool:
    """Does the filter hold one verdict per current trajectory, none older than its row?

    Judged from aggregates (a 1M-row anti-join per filter would cost seconds on a run with nothing to
    do): the same count and id-hash sum say the same rows; no row written after the filter's last
    verdicts says none was rewritten since (every run leaves each verdict no older than its row, so
    a later write is the only way to be out of date). When unsure, the caller looks row by row.
    """
    count, id_sum, last_run = store.query(
        f"SELECT {ID_SET_SQL}, max(created_at) FROM filter_verdicts WHERE filter = ?", [name]
    )[0]
    newest_row = rows[2]
    rewritten = newest_row is not None and (last_run is None or newest_row > last_run)
    return (count, id_sum) == rows[:2] and not rewritten
