"""The change log: which rows of the big tables were updated or deleted, so a copy catches up.

A copy of a table in DuckDB (reader.py) used to be taken again whole whenever the table changed:
after each filter's verdicts the 800k-row verdict table, after another process's commit the 1 GB of
trajectories. Rows are mostly appended, so a copy can instead be brought up to date by the rows it
lacks: those past the highest rowid it holds, and those updated or deleted since it was taken. SQLite
keeps no such record, so triggers write one (`_changes`, a row per updated or deleted row, a
sequence number that never repeats: AUTOINCREMENT). Inserts are not logged: a new row has a rowid
past the copy's highest, or reuses a deleted row's, which the log names.

`INSERT OR REPLACE` deletes the old row without firing delete triggers unless `recursive_triggers`
is on: every store connection turns it on (db.py). A program that writes without it (the `sqlite3`
shell) or drops a trigger is caught when the row count or the highest rowid moves, and the copy is
taken whole again; not when it replaces the table's last row (the new row takes its rowid back). After
such an edit by hand, copies held by running processes keep the old row; delete `RUN_DIR/copies/`.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

import duckdb
import pyarrow as pa

from .copies import copy_rows

# The tables that grow with a run (rows per answer, trajectory, verdict); the small ones are copied whole.
TRACKED = (
    "llm_calls", "scripts", "trajectories", "verdicts", "coa_traces", "filter_verdicts", "rollouts",
    "preference_pairs",
)  # fmt: skip
TRIGGER_PREFIX = "_changed_"


def change_log_migration() -> str:
    """The migration that adds the log and its triggers (a rowid updated in place is logged both ways),
    and the store's identity: copies saved as files (bases.py) belong to this file, not to one that
    replaces it in the same folder."""
    statements = [
        "CREATE TABLE _changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl VARCHAR NOT NULL, row_id INTEGER NOT NULL)",
        "CREATE INDEX _changes_by_table ON _changes (tbl, seq)",
        "CREATE TABLE _store (store_id VARCHAR NOT NULL)",
        "INSERT INTO _store VALUES (lower(hex(randomblob(8))))",
    ]
    for table in TRACKED:
        log = f"INSERT INTO _changes (tbl, row_id) VALUES ('{table}', OLD.rowid)"
        statements += [
            f"CREATE TRIGGER {TRIGGER_PREFIX}{table}_d AFTER DELETE ON {table} BEGIN {log}; END",
            f"CREATE TRIGGER {TRIGGER_PREFIX}{table}_u AFTER UPDATE ON {table} BEGIN {log}; "
            f"INSERT INTO _changes (tbl, row_id) SELECT '{table}', NEW.rowid WHERE NEW.rowid IS NOT OLD.rowid; END",
        ]
    return ";\n".join(statements)


def tracked_tables(db: sqlite3.Connection) -> set[str]:
    """The tables whose updates and deletes this file logs (a store made before the log has none)."""
    rows = db.execute(
        "SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
        [TRIGGER_PREFIX.replace("_", "\\_") + "%\\_d"],
    ).fetchall()
    return {row[0].lower() for row in rows}


class Mark(NamedTuple):
    """Where a copy stands: the last change it has seen, its highest rowid, how many rows it holds."""

    seq: int
    high: int
    rows: int


def mark_now(db: sqlite3.Connection, table: str) -> Mark:
    seq = db.execute("SELECT coalesce(max(seq), 0) FROM _changes WHERE tbl = ?", [table]).fetchone()[0]
    high, rows = db.execute(f'SELECT coalesce(max(rowid), 0), count(*) FROM "{table}"').fetchone()
    return Mark(seq, high, rows)


def changed_since(db: sqlite3.Connection, table: str, mark: Mark) -> list[int]:
    """The rowids updated or deleted since `mark` (a deleted row's rowid may hold a new row now)."""
    sql = "SELECT DISTINCT row_id FROM _changes WHERE tbl = ? AND seq > ?"
    return [row for (row,) in db.execute(sql, [table, mark.seq])]


def worth_catching_up(changed: list[int], mark: Mark, now: Mark) -> bool:
    """Fewer rows to fetch than half the table: a fresh copy reads at most twice as many, and deletes none."""
    return len(changed) + max(now.high - mark.high, 0) <= now.rows // 2


def catch_up(db: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, table: str, columns: list[tuple[str, str]],
             copy: str, mark: Mark, gone: str | None = None) -> Mark | None:  # fmt: skip
    """Bring the DuckDB table `copy` (taken at `mark`, holding `columns`) up to the file's rows: the rows
    changed since are deleted from it (and added to the table `gone`, when the copy lies over a base that
    cannot change: bases.py) and fetched again, with the rows past its highest rowid. The new mark, or
    None when a fresh copy is cheaper. Run it inside one read transaction (reader.py); the caller
    compares the row count it now shows with the mark's (a change the log missed)."""
    now = mark_now(db, table)
    if now == mark:
        return mark
    changed = changed_since(db, table, mark)
    if not worth_catching_up(changed, mark, now):
        return None
    if changed:
        duck.register("_changed", pa.table({"_rowid": pa.array(changed, pa.int64())}))
        try:
            duck.execute(f'DELETE FROM "{copy}" WHERE _rowid IN (SELECT _rowid FROM _changed)')
            if gone:
                duck.execute(f'INSERT INTO "{gone}" SELECT _rowid FROM _changed')
        finally:
            duck.unregister("_changed")
    changed_rows = "rowid <= ? AND rowid IN (SELECT row_id FROM _changes WHERE tbl = ? AND seq > ?)"
    copy_rows(db, duck, table, columns, copy, only=[("rowid > ?", [mark.high]),
                                                     (changed_rows, [mark.high, table, mark.seq])])  # fmt: skip
    return now
