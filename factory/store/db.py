"""One DuckDB file per run folder: migrations on open, transactional writes."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from ..errors import FactoryError
from .migrations import MIGRATIONS

STORE_FILENAME = "factory.duckdb"


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    """The run's DuckDB database. One writer process at a time (DuckDB's rule)."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise FactoryError(f"no run store at {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            raise FactoryError(f"cannot open run store {self.path}: {str(exc).splitlines()[0]}") from None
        # DuckDB connections are not safe for concurrent use from threads.
        self._lock = threading.RLock()
        if not read_only:
            self.migrate()

    @classmethod
    def open(cls, run_dir: str | Path, read_only: bool = False) -> "Store":
        return cls(Path(run_dir) / STORE_FILENAME, read_only=read_only)

    def migrate(self) -> list[str]:
        """Apply the migrations this file lacks, each in its own transaction."""
        with self._lock:
            self.con.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)"
            )
            done = {row[0] for row in self.con.execute("SELECT name FROM migrations").fetchall()}
            applied = []
            for name, sql in MIGRATIONS:
                if name in done:
                    continue
                with self.transaction():
                    self.con.execute(sql)
                    self.con.execute("INSERT INTO migrations VALUES (?, ?)", [name, utcnow()])
                applied.append(name)
            return applied

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM migrations ORDER BY name")]

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            self.con.execute("BEGIN TRANSACTION")
            try:
                yield self.con
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self._lock:
            return self.con.execute(sql, params or []).fetchall()

    def arrow_batches(self, sql: str, rows: int = 2048) -> Iterator[pa.RecordBatch]:
        """Stream a query's result in Arrow batches, on a cursor of its own (the store stays usable meanwhile)."""
        with self._lock:
            cursor = self.con.cursor()
        try:
            relation = cursor.sql(sql)
            # A relation streams without an extra copy; DuckDB 2 names it to_arrow_reader, 1.x fetch_arrow_reader.
            reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
            yield from reader(rows)
        finally:
            cursor.close()

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        with self._lock:
            self.con.execute(sql, params or [])

    def upsert(self, table: str, values: dict[str, Any]) -> None:
        """Insert one row by column name, replacing the row with the same key."""
        names, marks = ", ".join(values), ", ".join("?" * len(values))
        self.execute(f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({marks})", list(values.values()))

    def insert_rows(self, table: str, columns: dict[str, list[Any]], replace: bool = False) -> None:
        """Insert many rows in one transaction (column lists, via Arrow: ~30x faster than executemany)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        names = ", ".join(columns)
        with self.arrow_view("batch", pa.table(columns)), self.transaction() as con:
            con.execute(f"{verb} INTO {table} ({names}) SELECT {names} FROM batch")

    @contextmanager
    def arrow_view(self, name: str, table: Any) -> Iterator[None]:
        """Expose an Arrow table to SQL as `name` for the duration of the block."""
        with self._lock:
            self.con.register(name, table)
            try:
                yield
            finally:
                self.con.unregister(name)

    def close(self) -> None:
        with self._lock:
            self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
