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
from ..paths import make_folder
from .integrity import (
    classify,
    damaged,
    forget_clean,
    is_damage,
    is_write_failure,
    known_clean,
    read_through,
    stamp_clean,
    unwritable,
)
from .migrations import MIGRATIONS

STORE_FILENAME = "factory.duckdb"

# Runs of this process that are still going: only they may be `running` in a store this process
# opens for writing (a store opened twice in one process shares one DuckDB instance).
LIVE_RUNS: set[str] = set()


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Store:
    """The run's DuckDB database. One writer process at a time (DuckDB's rule)."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise FactoryError(f"no run store at {self.path}")
        self.in_memory = str(path) == ":memory:"
        self.seen_damage = False  # set when a read met a damaged block: close() must not stamp the file clean
        if not self.in_memory:
            make_folder(self.path.parent)
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            raise classify(self.path, exc) from None
        # DuckDB connections are not safe for concurrent use from threads.
        self._lock = threading.RLock()
        self._check_readable()
        if not read_only:
            self.migrate()
            self.mark_dead_runs_interrupted()

    def _check_readable(self) -> None:
        """Refuse a damaged file before writing to it or reporting part of it: read it through,
        unless the last clean close left it as it is."""
        if self.in_memory or known_clean(self.path):
            return
        try:
            read_through(self.con)
        except duckdb.Error as exc:
            self.con.close()
            raise classify(self.path, exc, "read") from None
        if not self.read_only:
            forget_clean(self.path)  # this process writes now; close() stamps the file again

    def mark_dead_runs_interrupted(self) -> int:
        """Mark `interrupted` every run left `running` by a process that is gone.

        DuckDB lets one process hold a file open for writing, so while this process holds it no
        other process can be running a run in it: a `running` row that is not one of this
        process's live runs belongs to a process that was killed (SIGKILL, power loss, OOM).
        Its finished_at stays NULL: when it died is not known.
        """
        live = sorted(LIVE_RUNS) or [""]
        marks = ", ".join("?" * len(live))
        with self._lock:
            (count,) = self.con.execute(
                f"UPDATE runs SET status = 'interrupted' WHERE status = 'running' AND run_id NOT IN ({marks})", live
            ).fetchone()
        return count

    @classmethod
    def open(cls, run_dir: str | Path, read_only: bool = False) -> "Store":
        return cls(Path(run_dir) / STORE_FILENAME, read_only=read_only)

    def migrate(self) -> list[str]:
        """Apply the migrations this file lacks, each in its own transaction."""
        with self._lock:
            self.con.execute("CREATE TABLE IF NOT EXISTS migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)")
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
        with self._lock, self._errors_named():
            self.con.execute("BEGIN TRANSACTION")
            try:
                yield self.con
            except BaseException as exc:
                try:
                    self.con.execute("ROLLBACK")
                except duckdb.Error:
                    if not is_damage(exc):  # after damage the rollback may fail too; the damage is the news
                        raise
                raise
            self.con.execute("COMMIT")

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self._lock, self._errors_named():
            return self.con.execute(sql, params or []).fetchall()

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        """A damaged file met mid-run becomes the one-line damage error, a write the disk refused the
        one-line StoreWriteError that stops the batch (other errors pass as they are).

        An in-memory store (the report's) does not know which attached file failed: its caller says.
        """
        try:
            yield
        except duckdb.Error as exc:
            if self.in_memory:
                raise
            if is_write_failure(exc):
                raise unwritable(self.path, exc) from None
            if not is_damage(exc):
                raise
            self.seen_damage = True
            raise damaged(self.path, exc) from None

    def arrow_batches(self, sql: str, rows: int = 2048) -> Iterator[pa.RecordBatch]:
        """Stream a query's result in Arrow batches, on a cursor of its own (the store stays usable meanwhile)."""
        with self._lock:
            cursor = self.con.cursor()
        try:
            yield from relation_batches(cursor.sql(sql), rows)
        finally:
            cursor.close()

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        with self._lock, self._errors_named():
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
        if not (self.read_only or self.in_memory or self.seen_damage):
            stamp_clean(self.path)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def relation_batches(relation: duckdb.DuckDBPyRelation, rows: int = 2048) -> Iterator[pa.RecordBatch]:
    """A relation's rows in Arrow batches, streamed without an extra copy (DuckDB 2 names the reader
    to_arrow_reader, 1.x fetch_arrow_reader)."""
    reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    yield from reader(rows)
