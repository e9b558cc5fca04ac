"""A shard's store into the run's store: every row of every run table, once.

Each shard store is ATTACHed read-only and copied in one transaction, table by table, by key (the
primary key, or NATURAL_KEYS for a table without one): keys the run's store lacks are inserted,
and a key whose row differs takes the shard's row (the shard is where its keys' work happens, so
its row is the latest: a request failed and later retried, a rollout checked again). A second
merge of the same shard changes nothing, so a rerun after a partial merge is safe.
`llm_calls` comes along, so a later single-process run on RUN_DIR answers from the cache.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import FactoryError
from ..store import Store
from ..store.integrity import first_line

NATURAL_KEYS = {"filter_verdicts": ("trajectory_id", "filter")}
NOT_MERGED = {"migrations"}  # each store records its own schema history
ALIAS = "shard_store"


def merge_shard(store: Store, shard_path: Path) -> dict[str, int]:
    """Copy the shard store's rows into `store`; returns {table: rows the run's store gained}."""
    try:
        store.execute("SET enable_progress_bar = false")  # a long merge must not draw DuckDB's bar into the output
        store.execute(f"ATTACH '{_quoted(shard_path)}' AS {ALIAS} (READ_ONLY)")
    except (duckdb.Error, FactoryError) as exc:
        raise FactoryError(f"cannot read shard store {shard_path} to merge it: {first_line(exc)}") from None
    try:
        tables = [t for t in _tables(store, ALIAS) if t in set(_tables(store, _main(store))) - NOT_MERGED]
        before = {table: _count(store, table) for table in tables}
        with store.transaction() as con:
            for table in tables:
                _merge_table(con, store, table)
        return {table: _count(store, table) - before[table] for table in tables}
    finally:
        store.execute(f"DETACH {ALIAS}")


def _merge_table(con: duckdb.DuckDBPyConnection, store: Store, table: str) -> None:
    """Rows whose key the run's store has but with other values are replaced, then the missing keys are
    inserted: a second merge of an unchanged shard only compares (a shard's rerun re-merges everything)."""
    names = _columns(con, ALIAS, table)
    key = _primary_key(con, _main(store), table) or NATURAL_KEYS.get(table)
    if not key:
        raise FactoryError(
            f"table {table} has no key to merge shards by: add it to factory/scale/merge.py NATURAL_KEYS"
        )
    columns = ", ".join(f'"{name}"' for name in names)
    same_key = " AND ".join(f'n."{name}" = t."{name}"' for name in key)
    changed = (
        f"FROM {ALIAS}.{table} n JOIN {table} t ON {same_key} "
        f"WHERE ROW({_prefixed('n', names)}) IS DISTINCT FROM ROW({_prefixed('t', names)})"
    )
    if table in NATURAL_KEYS:  # no index: drop the changed rows, then they are missing ones
        key_list = ", ".join(f'"{name}"' for name in key)
        con.execute(f"DELETE FROM {table} WHERE ({key_list}) IN (SELECT ({_prefixed('n', key)}) {changed})")
    else:
        con.execute(f"INSERT OR REPLACE INTO {table} ({columns}) SELECT {_prefixed('n', names)} {changed}")
    con.execute(
        f"INSERT INTO {table} ({columns}) SELECT {_prefixed('n', names)} FROM {ALIAS}.{table} n "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {same_key})"
    )


def _prefixed(alias: str, names: list[str]) -> str:
    return ", ".join(f'{alias}."{name}"' for name in names)


def _main(store: Store) -> str:
    return store.query("SELECT current_database()")[0][0]


def _tables(store: Store, database: str) -> list[str]:
    sql = "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' ORDER BY 1"
    return [row[0] for row in store.query(sql, [database])]


def _columns(con: duckdb.DuckDBPyConnection, database: str, table: str) -> list[str]:
    sql = "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND table_name = ? ORDER BY column_index"
    return [row[0] for row in con.execute(sql, [database, table]).fetchall()]


def _primary_key(con: duckdb.DuckDBPyConnection, database: str, table: str) -> list[str]:
    sql = (
        "SELECT constraint_column_names FROM duckdb_constraints() WHERE database_name = ? AND table_name = ? "
        "AND constraint_type = 'PRIMARY KEY'"
    )
    row = con.execute(sql, [database, table]).fetchone()
    return list(row[0]) if row else []


def _count(store: Store, table: str) -> int:
    return store.query(f"SELECT count(*) FROM {table}")[0][0]


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
