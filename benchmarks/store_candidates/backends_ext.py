"""The candidates that need DuckDB extensions: only the 1.4.4 packages exist (duckdb-ext-ducklake,
duckdb-ext-sqlite), so these run from a venv with duckdb==1.4.4 (venv14); importing this module
adds them to BACKENDS."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
from backends import AGG, BACKENDS, SqliteWal


def extension_dir() -> Path:
    """Where the duckdb-ext-* packages put their extension files (only for the DuckDB they pin)."""
    import duckdb_ext

    return Path(duckdb_ext.__path__[0]) / "extensions" / f"v{duckdb.__version__}" / "linux_amd64"


class DuckLake:
    """Candidate 1: DuckLake, SQLite catalog, Parquet data, small commits inlined into the catalog.
    Needs DuckDB 1.4.4 (venv14): the extension packages exist for no 2.x release."""

    name = "ducklake_sqlite"
    INLINE_ROWS = int(os.environ.get("LAKE_INLINE_ROWS", "1000"))

    @staticmethod
    def _connect(folder: Path) -> duckdb.DuckDBPyConnection:
        base = extension_dir()
        con = duckdb.connect()
        con.execute(f"LOAD '{base / 'sqlite_scanner.duckdb_extension'}'")
        con.execute(f"LOAD '{base / 'ducklake.duckdb_extension'}'")
        cat, data = Path(folder) / "catalog.sqlite", Path(folder) / "data"
        con.execute(f"ATTACH 'ducklake:sqlite:{cat}' AS lake (DATA_PATH '{data}/', "
                    f"DATA_INLINING_ROW_LIMIT {DuckLake.INLINE_ROWS})")  # fmt: skip
        con.execute("USE lake")
        return con

    @staticmethod
    def setup(folder: Path) -> None:
        con = DuckLake._connect(folder)
        con.execute("CREATE TABLE IF NOT EXISTS calls (id BIGINT, key VARCHAR, kind VARCHAR, tokens BIGINT,"
                    " cost DOUBLE, written_at DOUBLE, body VARCHAR)")  # fmt: skip
        con.close()

    class Writer:
        def __init__(self, folder: Path):
            self.con = DuckLake._connect(folder)

        def insert(self, rows: list[dict]) -> None:
            import pyarrow as pa

            self.con.register("batch", pa.Table.from_pylist(rows))
            self.con.execute("INSERT INTO calls SELECT id, key, kind, tokens, cost, written_at, body FROM batch")
            self.con.unregister("batch")

        def close(self) -> None:
            self.con.close()

    @staticmethod
    def count(folder: Path) -> tuple[int, float]:
        con = DuckLake._connect(folder)
        try:
            return con.execute("SELECT count(*), coalesce(max(written_at), 0) FROM calls").fetchone()
        finally:
            con.close()

    @staticmethod
    def aggregate(folder: Path) -> list[tuple]:
        con = DuckLake._connect(folder)
        try:
            return con.execute(AGG.format(t="calls")).fetchall()
        finally:
            con.close()


class SqliteViaDuckdb(SqliteWal):
    """Candidate 2's read side in DuckDB SQL: the writer is SqliteWal's; readers ATTACH the SQLite
    file through sqlite_scanner (needs DuckDB 1.4.4 + duckdb-ext-sqlite: venv14)."""

    name = "sqlite_via_duckdb"

    @staticmethod
    def _duck(folder: Path) -> duckdb.DuckDBPyConnection:
        base = extension_dir()
        con = duckdb.connect()
        con.execute(f"LOAD '{base / 'sqlite_scanner.duckdb_extension'}'")
        con.execute(f"ATTACH '{Path(folder) / 'calls.sqlite'}' AS run (TYPE sqlite, READ_ONLY)")
        return con

    @staticmethod
    def count(folder: Path) -> tuple[int, float]:
        con = SqliteViaDuckdb._duck(folder)
        try:
            return con.execute("SELECT count(*), coalesce(max(written_at), 0) FROM run.calls").fetchone()
        finally:
            con.close()

    @staticmethod
    def aggregate(folder: Path) -> list[tuple]:
        con = SqliteViaDuckdb._duck(folder)
        try:
            return con.execute(AGG.format(t="run.calls")).fetchall()
        finally:
            con.close()


BACKENDS.update({b.name: b for b in (DuckLake, SqliteViaDuckdb)})
