"""One SQLite file per run folder, in WAL mode: any process reads it while a run writes.

Why SQLite (docs/store_design.md has the measurements): WAL gives readers in other processes
that never block the writer, several writer processes on one file (Ray shards on one host), a
commit per answer at ~0.1 ms that survives SIGKILL (synchronous=NORMAL: in the page cache when
COMMIT returns), and a one-line error on a full disk with every committed row kept. DuckDB stays
the query engine: reads run in DuckDB's dialect over copies of the tables (reader.py); writes
run in SQLite's.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb
import pyarrow as pa

from ..errors import FactoryError
from ..paths import make_folder
from .check import forget_clean, known_clean, quick_check, stamp_clean
from .errors import classify, damaged, is_damage, is_write_failure, unwritable
from .migrations import MIGRATIONS, migration_statements
from .reader import Reader
from .reserve import DiskReserve
from .runlocks import RunLocks
from .values import sql_params

STORE_FILENAME = "factory.sqlite"
OLD_STORE_FILENAME = "factory.duckdb"  # factory <= 0.37: convert with `factory store convert`
# recursive_triggers: INSERT OR REPLACE's deletes reach the change log's triggers (changes.py).
PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA recursive_triggers=ON")
# A commit writes whole pages to the WAL: 16 KiB pages packed 2 KB rows tighter, but a commit per answer
# cost 15-70% more CPU with them (an attempt row and an answer row, 3,000 times, measured side by side).
PAGE_SIZE = 4096
BUSY_TIMEOUT_S = 30.0  # another writer's transaction is waited for, not refused
# What reading or writing a store can raise besides FactoryError: DuckDB's (queries), SQLite's (writes).
STORE_ERRORS = (duckdb.Error, sqlite3.Error, FactoryError)


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Writer:
    """What a transaction's block writes through: SQLite statements, copies marked stale."""

    def __init__(self, store: "Store"):
        self.store = store

    def execute(self, sql: str, params: Iterable[Any] | None = None) -> sqlite3.Cursor:
        cursor = self.store.db.execute(sql, sql_params(params))
        self.store.reader.wrote(sql)
        return cursor

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        self.store.db.executemany(sql, (sql_params(row) for row in rows))
        self.store.reader.wrote(sql)


class Store:
    """The run's SQLite database: writes in SQLite's SQL, queries in DuckDB's."""

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self.in_memory = str(path) == ":memory:"
        self.damage_seen = False  # a query met damage: close() must not stamp the file clean
        if not self.in_memory:
            refuse_old_store(self.path)
            if read_only and not self.path.exists():
                raise FactoryError(f"no run store at {self.path}")
            make_folder(self.path.parent)
        self._lock = threading.RLock()  # one connection, used from the event loop and worker threads
        self._depth = 0  # open transactions of this store (nested ones are savepoints)
        self.reserve = DiskReserve(self.path.with_name(f".{self.path.name}.reserve"), self.read_only or self.in_memory)
        self.db = self._connect()
        self.reader = Reader(self.db, None if self.in_memory else self.path.resolve())
        self.run_locks = RunLocks(self.path if self.in_memory else self.path.resolve())  # a shard links the store
        if not read_only:
            self.migrate()
            self.mark_dead_runs_interrupted()

    def _connect(self) -> sqlite3.Connection:
        target = f"file:{self.path}?mode=ro" if self.read_only else str(self.path)
        try:
            db = sqlite3.connect(target, uri=self.read_only, isolation_level=None, timeout=BUSY_TIMEOUT_S,
                                 check_same_thread=False)  # fmt: skip
            if not self.read_only:
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # only a new file takes it
                for pragma in PRAGMAS:
                    db.execute(pragma)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # a file that is not a database fails here
            if not (self.read_only or self.in_memory):
                self._check_before_writing(db)
        except sqlite3.Error as exc:
            raise classify(self.path, exc) from None
        return db

    def _check_before_writing(self, db: sqlite3.Connection) -> None:
        """Refuse a damaged file before writing to it (check.py), unless a clean close left it as it is."""
        if not known_clean(self.path):
            try:
                quick_check(db)
            except sqlite3.Error:
                db.close()
                raise
        forget_clean(self.path)  # this process writes now; close() stamps the file again

    def mark_dead_runs_interrupted(self) -> int:
        """Mark `interrupted` every run left `running` by a process that is gone (SIGKILL, OOM, power
        loss): a running run holds its lock file (runlocks.py) until its process ends.
        Its finished_at stays NULL: when it died is not known."""
        running = [r for (r,) in self.query("SELECT run_id FROM runs WHERE status = 'running'")]
        dead = [r for r in running if not self.run_locks.held(r)]
        for run_id in dead:
            self.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ? AND status = 'running'", [run_id])
        return len(dead)

    @classmethod
    def open(cls, run_dir: str | Path, read_only: bool = False) -> "Store":
        return cls(Path(run_dir) / STORE_FILENAME, read_only=read_only)

    def migrate(self) -> list[str]:
        """Apply the migrations this file lacks, each in its own transaction."""
        with self.transaction() as con:
            con.execute("CREATE TABLE IF NOT EXISTS migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)")
            done = {row[0] for row in con.execute("SELECT name FROM migrations").fetchall()}
        applied = []
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            with self.transaction() as con:
                if con.execute("SELECT 1 FROM migrations WHERE name = ?", [name]).fetchone():
                    continue  # another writer applied it meanwhile
                for statement in migration_statements(sql):
                    con.execute(statement)
                con.execute("INSERT INTO migrations VALUES (?, ?)", [name, utcnow()])
                self.reader.wrote("")
            applied.append(name)
        return applied

    def has_table(self, name: str) -> bool:
        return bool(self.lookup("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [name])[0][0])

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM migrations ORDER BY name")]

    @contextmanager
    def transaction(self) -> Iterator[Writer]:
        """A write transaction (BEGIN IMMEDIATE: the write lock is taken now, waited for if another
        process holds it); the block's statements are SQLite's. Inside another transaction of this
        store it is a savepoint: its writes are undone alone, and committed with the outer one."""
        with self._lock, self._errors_named():
            nested = self.db.in_transaction
            self.db.execute(f"SAVEPOINT s{self._depth}" if nested else "BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield Writer(self)
            except BaseException as exc:
                self._depth -= 1
                self._undo(nested, exc)
                raise
            self._depth -= 1
            self.db.execute(f"RELEASE s{self._depth}" if nested else "COMMIT")

    def _undo(self, nested: bool, exc: BaseException) -> None:
        try:
            if not self.db.in_transaction:
                pass  # SQLite rolled it back itself (a full disk, an I/O error)
            elif nested:
                self.db.execute(f"ROLLBACK TO s{self._depth}")
                self.db.execute(f"RELEASE s{self._depth}")
            else:
                self.db.execute("ROLLBACK")
        except sqlite3.Error:
            if not is_damage(exc):  # after damage the rollback may fail too; the damage is the news
                raise
        self.reader.wrote("")  # what the block wrote is gone: no copy may hold it

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """Rows of a query in DuckDB's SQL over the store's tables (and any Arrow view)."""
        with self._lock, self._errors_named():
            return self.reader.query(sql, params).fetchall()

    @contextmanager
    def snapshot(self) -> Iterator["Store"]:
        """Queries in the block all see the store as it was at its first read (one SQLite read
        transaction): a summary made of several queries adds up while a run writes. Keep it short:
        a read transaction held open stops the WAL from being checkpointed."""
        with self._lock, self._errors_named():
            self.db.execute("BEGIN")
            self.reader.data_version = None  # copies made before the block may be older than its view
            try:
                yield self
            finally:
                self.db.execute("COMMIT")

    def lookup(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        """Rows of a query in SQLite's SQL, straight from the file: for point lookups on a hot path,
        where a copy of a table changed by every write would cost more than the lookup."""
        with self._lock, self._errors_named():
            return self.db.execute(sql, sql_params(params)).fetchall()

    def duck_execute(self, sql: str, params: list[Any] | None = None) -> None:
        """A statement for the query side alone, in DuckDB's SQL: a setting, a view or a temp table over
        the store's tables (never written to the file)."""
        with self._lock, self._errors_named():
            self.reader.define(sql, params)

    @property
    def duck(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection queries run in (settings, parsing); its tables are read-only copies."""
        return self.reader.duck

    @contextmanager
    def _errors_named(self) -> Iterator[None]:
        """A damaged file met mid-run becomes the one-line damage error, a write the disk refused the
        one-line StoreWriteError that stops the batch (other errors pass as they are)."""
        try:
            yield
        except sqlite3.Error as exc:
            if is_write_failure(exc):
                failure = unwritable(self.path, exc)  # its cause read before the reserve is freed
                self.reserve.release()  # room for what is already paid for, while the batch stops
                raise failure from None
            if is_damage(exc):
                self.damage_seen = True
                raise damaged(self.path, exc) from None
            raise

    def arrow_batches(self, sql: str, rows: int = 2048) -> Iterator[pa.RecordBatch]:
        """Stream a query's result in Arrow batches, on a cursor of its own (the store stays usable meanwhile)."""
        with self._lock, self._errors_named():
            self.reader.prepare(sql)
            cursor = self.reader.cursor()
        try:
            yield from relation_batches(cursor.sql(sql), rows)
        finally:
            cursor.close()

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """One write statement in SQLite's SQL, committed."""
        with self.transaction() as con:
            con.execute(sql, params)

    def commit(self, tables: tuple[str, ...], statements: list[tuple[str, list[Any]]]) -> None:
        """Statements that write `tables` (and no other), in one transaction: the lean path for the
        call log's commit of each event-loop turn's writes (no nesting, no parsing)."""
        with self._lock, self._errors_named():
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    self.db.execute(sql, sql_params(params))
            except BaseException as exc:
                self._undo(False, exc)
                raise
            self.db.execute("COMMIT")
            for table in tables:
                self.reader.changed(table)

    def upsert(self, table: str, values: dict[str, Any]) -> None:
        """Insert one row by column name, replacing the row with the same key."""
        names, marks = ", ".join(values), ", ".join("?" * len(values))
        self.execute(f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({marks})", list(values.values()))

    def insert_rows(self, table: str, columns: dict[str, list[Any]], verb: str = "INSERT") -> None:
        """Insert many rows (column lists, or an Arrow table's columns) in one transaction."""
        names, marks = ", ".join(columns), ", ".join("?" * len(columns))
        values = [list(v.to_pylist()) if hasattr(v, "to_pylist") else v for v in columns.values()]
        with self.transaction() as con:
            con.executemany(f"{verb} INTO {table} ({names}) VALUES ({marks})", zip(*values))

    def insert_query(self, table: str, sql: str, params: list[Any] | None = None, verb: str = "INSERT") -> int:
        """Insert what a DuckDB query over the store selects (its columns by name); the count."""
        with self._lock:
            result = self.query_arrow(sql, params)
            if result.num_rows:
                self.insert_rows(table, {name: result.column(name) for name in result.column_names}, verb)
        return result.num_rows

    def query_arrow(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        with self._lock, self._errors_named():
            return self.reader.arrow_table(sql, params)

    @contextmanager
    def arrow_view(self, name: str, table: Any) -> Iterator[None]:
        """Expose an Arrow table to queries as `name` for the duration of the block."""
        with self._lock:
            self.duck.register(name, table)
            try:
                yield
            finally:
                self.duck.unregister(name)

    def close(self) -> None:
        with self._lock:
            self.reader.close()
            self.db.close()  # the last connection to close checkpoints the WAL into the file
            self.run_locks.close()
            self.reserve.release()
        if not (self.read_only or self.in_memory or self.damage_seen):
            stamp_clean(self.path)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def refuse_old_store(path: Path) -> None:
    """A run folder of an older factory (a DuckDB file, no SQLite one): one line saying how to convert it."""
    old = path.with_name(OLD_STORE_FILENAME)
    if path.name == STORE_FILENAME and not path.exists() and old.exists():
        raise FactoryError(
            f"{path.parent} holds a store of an older factory ({OLD_STORE_FILENAME}); "
            f"convert it with: factory store convert {path.parent}"
        )


def relation_batches(relation: duckdb.DuckDBPyRelation, rows: int = 2048) -> Iterator[pa.RecordBatch]:
    """A relation's rows in Arrow batches, streamed without an extra copy (DuckDB 2 names the reader
    to_arrow_reader, 1.x fetch_arrow_reader)."""
    reader = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    yield from reader(rows)


def _unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def remove_store_files(path: Path) -> None:
    """Delete a store file with its WAL, shared-memory and stamp files (a conversion's temp file)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f".{path.name}.clean"):
        _unlink(path.with_name(name))
