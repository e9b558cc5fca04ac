"""Read a run store of any schema version without writing to it.

The report and `factory quality` open an in-memory store with the current schema and points each of
its tables at the run's file, attached read-only. A store written by an older
version reads as if migrated (missing tables are empty, missing columns NULL),
and the run folder is never touched, even by a migration.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import FactoryError
from .db import STORE_FILENAME, Store

ATTACHED = "run"


def open_snapshot(run_dir: str | Path) -> Store:
    path = Path(run_dir) / STORE_FILENAME
    if not path.is_file():
        raise FactoryError(f"no run store at {path}")
    store = Store(":memory:")  # DuckDB's in-memory database; Store applies every migration to it
    try:
        literal = _quote(str(path), "'")
        store.execute(f"ATTACH '{literal}' AS {ATTACHED} (READ_ONLY)")
        for table in _run_tables(store):
            _read_through(store, table)
    except duckdb.Error as exc:
        store.close()
        # DuckDB lets no reader in while another process writes the file.
        if "could not set lock" in str(exc).lower():
            raise FactoryError(f"run store {path} is in use by another process; run the report when it ends") from None
        raise FactoryError(f"cannot read run store {path}: {str(exc).splitlines()[0]}") from None
    return store


def _quote(text: str, mark: str = '"') -> str:
    return text.replace(mark, mark * 2)


def _columns(store: Store, catalog: str, table: str) -> list[tuple[str, str]]:
    return store.query(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        [catalog, table],
    )


def _run_tables(store: Store) -> list[str]:
    """The run's tables that the current schema also has (a newer version's extra tables are ignored)."""
    current = {row[0] for row in store.query(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
        "AND table_type = 'BASE TABLE' AND table_name <> 'migrations'")}  # fmt: skip
    found = store.query(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? AND table_type = 'BASE TABLE'",
        [ATTACHED],
    )
    return sorted(name for (name,) in found if name in current)


def _read_through(store: Store, table: str) -> None:
    """Replace the empty in-memory table by a view of the run's table, in the current column layout."""
    (database,) = store.query("SELECT current_database()")[0]
    have = {name for name, _ in _columns(store, ATTACHED, table)}
    select = ", ".join(
        f'"{_quote(name)}"' if name in have else f'CAST(NULL AS {kind}) AS "{_quote(name)}"'
        for name, kind in _columns(store, database, table)
    )
    store.execute(f'DROP TABLE "{_quote(table)}"')
    store.execute(f'CREATE VIEW "{_quote(table)}" AS SELECT {select} FROM {ATTACHED}."{_quote(table)}"')
