"""A remote shard's store into the run's store: every row of every run table, once.

Shards on the driver's host write the run's own store (shard_task.link_run_store): SQLite's WAL
lets several processes of one host write one file, and readers see their rows live. A WAL file
cannot be shared between hosts (it needs shared memory), so a shard on another node keeps a store
in its shard folder, and the driver copies it in when the shards end. Each table is copied by key
(its primary key, or NATURAL_KEYS): a key whose row the shard holds takes the shard's row (the
shard is where its keys' work happened, so its row is the latest). A second merge of the same
shard changes nothing, so a rerun after a partial merge is safe.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import FactoryError
from ..store import Store
from ..store.errors import first_line

NATURAL_KEYS = {"filter_verdicts": ("trajectory_id", "filter")}
NOT_MERGED = {"migrations", "_changes", "_store"}  # each store records its own schema history and row changes
ALIAS = "shard_store"


def merge_shard(store: Store, shard_path: Path) -> dict[str, int]:
    """Copy the shard store's rows into `store`; returns {table: rows the run's store gained}."""
    try:
        store.lookup(f"ATTACH DATABASE ? AS {ALIAS}", [f"file:{shard_path}?mode=ro"])
    except sqlite3.Error as exc:
        raise FactoryError(f"cannot read shard store {shard_path} to merge it: {first_line(exc)}") from None
    try:
        tables = sorted(set(_tables(store, ALIAS)) & set(_tables(store, "main")) - NOT_MERGED)
        before = {table: _count(store, table) for table in tables}
        with store.transaction() as con:
            for table in tables:
                _merge_table(con, store, table)
        return {table: _count(store, table) - before[table] for table in tables}
    finally:
        store.lookup(f"DETACH DATABASE {ALIAS}")


def _merge_table(con, store: Store, table: str) -> None:
    """The shard's rows the run's store lacks or holds otherwise: a second merge of an unchanged shard
    only compares."""
    shard_columns = {row[1] for row in store.lookup(f'PRAGMA {ALIAS}.table_info("{table}")')}
    names = [row[1] for row in store.lookup(f'PRAGMA main.table_info("{table}")') if row[1] in shard_columns]
    columns = ", ".join(f'"{name}"' for name in names)
    same_row = " AND ".join(f't."{name}" IS n."{name}"' for name in names)
    changed = f"FROM {ALIAS}.{table} n WHERE NOT EXISTS (SELECT 1 FROM main.{table} t WHERE {same_row})"
    if table in NATURAL_KEYS:  # no unique index: the rows the shard rewrites go first
        same_key = " AND ".join(f'n."{name}" = {table}."{name}"' for name in NATURAL_KEYS[table])
        con.execute(f"DELETE FROM main.{table} WHERE EXISTS (SELECT 1 {changed} AND {same_key})")
    prefixed = ", ".join(f'n."{name}"' for name in names)
    con.execute(f"INSERT OR REPLACE INTO main.{table} ({columns}) SELECT {prefixed} {changed}")


def _count(store: Store, table: str) -> int:
    return store.lookup(f'SELECT count(*) FROM main."{table}"')[0][0]


def _tables(store: Store, database: str) -> list[str]:
    sql = f"SELECT name FROM {database}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    return [row[0] for row in store.lookup(sql)]
