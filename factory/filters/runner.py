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
Each filter's verdicts are computed in DuckDB over the store's tables, then written in one
transaction: a killed run leaves every filter either as it was or fully updated.
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
from ..store.values import sql_value
from .compile import check_user_sql, compile_filter
from .config import FilterConfig, PassRateFilter, load_filter_config
from .funnel import FilterFunnel, build_funnel
from .passrate import rollout_gaps
from .sql import BASE_VIEW_SQL, ROWS, Compiled, pending, quote


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
    """A filter config carries SQL (`sql`, `where`) from whoever wrote it, and it runs in the store's DuckDB
    (an in-memory database over copies of the tables): from here on that DuckDB reads and writes no file
    (`read_text('/etc/shadow')`, COPY, ATTACH are refused) until the store closes (DuckDB cannot turn it
    back on). Filters need no file: they read the store's tables; verdicts are written by the runner."""
    if store.reader.hardened:
        return  # a second run of filters on this store: already so, and locked
    store.reader.isolate()  # DuckDB's settings are its instance's: these must touch no other store
    store.duck_execute("SET enable_external_access = false")
    store.duck_execute("SET lock_configuration = true")
    store.reader.hardened = True


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
    store.duck_execute(BASE_VIEW_SQL)
    for spec in config.filters:  # every user predicate is checked before anything is written
        check_user_sql(store, spec, config.source)
    gaps = [rollout_gaps(store, spec, config.source) for spec in config.filters if isinstance(spec, PassRateFilter)]
    compiled = [compile_filter(spec) for spec in config.filters]
    removed = remove_filters(store, [spec.name for spec in config.filters])
    now, seen = utcnow(), look(store)  # before any filter writes: each decides on the store as it found it
    runs = [apply_filter(store, item, position, now, seen) for position, item in enumerate(compiled, 1)]
    return runs, removed, [line for line in gaps if line]


def remove_filters(store: Store, keep: list[str]) -> dict[str, int]:
    """Drop verdicts and config rows of filters that left the config; verdicts removed per filter."""
    names = ", ".join(quote(name) for name in keep)
    counts = store.query(f"SELECT filter, count(*) FROM filter_verdicts WHERE filter NOT IN ({names}) GROUP BY filter")
    stale = store.query(f"SELECT filter FROM filter_configs WHERE filter NOT IN ({names})")
    with store.transaction() as con:
        con.execute(f"DELETE FROM filter_verdicts WHERE filter NOT IN ({names})")
        con.execute(f"DELETE FROM filter_configs WHERE filter NOT IN ({names})")
    removed = {name: 0 for (name,) in stale}
    removed.update(dict(counts))
    return removed


def apply_filter(store: Store, item: Compiled, position: int, now: datetime, seen: "Seen") -> FilterRun:
    spec, started = item.spec, time.perf_counter()
    mode = decide_mode(store, item, seen)
    verdicts, judge = None, []
    if mode != "unchanged":
        verdicts, judge = judged_verdicts(store, item, mode == "incremental")
    config_hash, stamp = spec.config_hash(), sql_value(now)  # once, not per verdict
    with store.transaction() as con:
        if verdicts is not None:
            # filter_verdicts has no unique key (SQLite would check it per row): the verdicts about to be
            # written are deleted first, which keeps one verdict per (trajectory, filter).
            if mode == "incremental":
                con.executemany("DELETE FROM filter_verdicts WHERE filter = ? AND trajectory_id = ?",
                                [(spec.name, trajectory_id) for trajectory_id in judge])  # fmt: skip
                con.execute(
                    "DELETE FROM filter_verdicts WHERE filter = ? AND trajectory_id NOT IN "
                    "(SELECT trajectory_id FROM trajectories)",
                    [spec.name],
                )
            else:
                con.execute("DELETE FROM filter_verdicts WHERE filter = ?", [spec.name])
            con.executemany(
                "INSERT INTO filter_verdicts (trajectory_id, filter, keep, reason, weight, split, config_hash, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row, config_hash, stamp) for row in verdicts],
            )
        con.execute(
            "INSERT OR REPLACE INTO filter_configs VALUES (?, ?, ?, ?, ?, ?)",
            [spec.name, position, spec.kind, json.dumps(spec.model_dump(mode="json")), spec.config_hash(), now],
        )
    judged = len(verdicts) if verdicts is not None else 0
    return FilterRun(spec.name, spec.kind, position, mode, judged, time.perf_counter() - started)


def judged_verdicts(store: Store, item: Compiled, incremental: bool) -> tuple[list[tuple], list[str]]:
    """The filter's verdicts, computed in DuckDB: (rows of (trajectory_id, filter, keep, reason, weight,
    split), the trajectory ids judged when incremental)."""
    spec = item.spec
    for statement in item.setup:
        store.duck_execute(statement)
    judge: list[str] = []
    if incremental:
        store.duck_execute(
            f"CREATE OR REPLACE TEMP TABLE filter_pending AS SELECT trajectory_id FROM trajectories t "
            f"WHERE {pending(spec.name)}"
        )
        judge = [trajectory_id for (trajectory_id,) in store.query("SELECT trajectory_id FROM filter_pending")]
        # ids in a small temp table, which DuckDB turns into a filter on the scan: the big columns
        # (completion, turns) are read for those rows alone
        select = item.select.replace(ROWS, "t.trajectory_id IN (SELECT trajectory_id FROM filter_pending)")
    else:
        select = item.select.replace(ROWS, "true")
    verdicts = store.query(f"SELECT trajectory_id, {quote(spec.name)}, keep, reason, weight, split FROM ({select})")
    for statement in item.teardown:
        store.duck_execute(statement)
    return verdicts, judge


@dataclass
class Seen:
    """The store as the run found it: the trajectories' (count, newest created_at), and per filter
    (verdicts, newest verdict's created_at, verdicts whose trajectory is gone)."""

    rows: tuple
    verdicts: dict[str, tuple[int, datetime | None, int]]


def look(store: Store) -> Seen:
    """One pass over the copies, before any filter writes (a filter's decision reads its own verdicts
    alone, which no earlier filter of the run changes)."""
    rows = store.query("SELECT count(*), max(created_at) FROM trajectories")[0]
    verdicts = store.query(
        "SELECT v.filter, count(*), max(v.created_at), count(*) FILTER (WHERE t.trajectory_id IS NULL) "
        "FROM filter_verdicts v LEFT JOIN (SELECT DISTINCT trajectory_id FROM trajectories) t USING (trajectory_id) "
        "GROUP BY v.filter"
    )
    return Seen(tuple(rows), {name: (count, newest, orphans) for name, count, newest, orphans in verdicts})


def decide_mode(store: Store, item: Compiled, seen: Seen) -> str:
    spec = item.spec
    found = store.lookup("SELECT config_hash, updated_at FROM filter_configs WHERE filter = ?", [spec.name])
    if not found:
        return "new"
    config_hash, updated_at = found[0]
    if config_hash != spec.config_hash():
        return "changed"
    if item.reads_rollouts and store.lookup("SELECT max(created_at) > ? FROM rollouts", [updated_at])[0][0]:
        return "new rollouts"
    if in_sync(seen, spec.name):
        return "unchanged"
    return "new rows" if item.whole_set else "incremental"


def in_sync(seen: Seen, name: str) -> bool:
    """Does the filter hold one verdict per current trajectory, none older than its row?

    The same count and no verdict whose trajectory is gone say the same rows (the runner keeps one
    verdict per trajectory and filter); no row written after the filter's last verdicts says none was
    rewritten since (every run leaves each verdict no older than its row, so a later write is the only
    way to be out of date). When unsure, the caller looks row by row.
    """
    count, last_run, orphans = seen.verdicts.get(name, (0, None, 0))
    total, newest_row = seen.rows
    rewritten = newest_row is not None and (last_run is None or newest_row > last_run)
    return count == total and not rewritten and orphans == 0
