"""DuckDB's view of the SQLite store: the queries keep DuckDB's dialect.

The store of record is a SQLite file (db.py says why). Queries are written in DuckDB's SQL (list
functions, QUALIFY, `::` casts...), so each store has an in-memory DuckDB database in which every
stored table is a copy of its rows (read through Arrow), with the columns cast back to the types
the schema declares (SQLite keeps timestamps as text, booleans as integers, lists as JSON text).

A copy is taken when a query first names the table. When the table changed since (this connection's
own writes mark the tables they name, another process's commit, PRAGMA data_version, marks every
table), the copy of a big table catches up by the rows added, updated or deleted since (changes.py:
a trigger-kept change log); a small table's is taken again. So a reader in a loop pays for a row
once per change, not per query. A change of schema (PRAGMA schema_version) drops every copy. A big
tracked table's whole copy is saved as a Parquet base beside the store, which this and every later
process reads in place and catches up the same way (bases.py). An in-memory copy
leaves out the bulky text columns (BULKY) that the query and the views it names do not mention (all
are copied for `*`): a summary of the call log does not copy every prompt and answer. A later query
that needs a bulky column fetches that one alone and joins it on (copies.py).
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

from .bases import BASE_MIN_ROWS, Base, base_view, open_base, store_id, usable_base
from .changes import Mark, catch_up, mark_now, tracked_tables
from .copies import copy_rows, widen
from .duck import Catalog, table_names

# DuckDB-only views over the tables (SQLite has no list aggregates), and the tables each reads.
VIEWS = {
    "curation": (
        """
        CREATE OR REPLACE VIEW curation AS
            SELECT trajectory_id, bool_and(keep) AS keep, product(weight) AS weight, max(split) AS split,
                   list(filter ORDER BY filter) FILTER (WHERE NOT keep) AS dropped_by,
                   list(reason ORDER BY filter) FILTER (WHERE NOT keep) AS drop_reasons
            FROM filter_verdicts GROUP BY trajectory_id
        """,
        ("filter_verdicts",),
    ),
}
WRITTEN_TABLE = re.compile(
    r"^\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:\w+\.)?\"?(\w+)", re.I
)
# The text columns that hold most of a table's bytes: copied only for a query that mentions them.
BULKY = {
    "llm_calls": ("params", "messages", "response_schema", "response", "parsed", "error"),
    "trajectories": ("steps", "turns", "conversations", "stats", "prompt", "completion", "check_detail", "tools"),
    "coa_traces": ("agents", "events", "steps", "question", "final_answer"),
    "scripts": ("script", "problems"),
    "rollouts": ("completion", "detail"),
    "preference_pairs": ("prompt", "chosen", "rejected", "evidence"),
}
# Every column: SELECT *, t.*, COLUMNS(*), or a table described.
STAR = re.compile(r"(?:SELECT|DISTINCT|,|\.|\()\s*\*|^\s*(?:DESCRIBE|SHOW|SUMMARIZE)\b", re.I)
COUNT_STAR = re.compile(r"\bcount\s*\(\s*\*\s*\)", re.I)
PARAMETER = re.compile(r"\?|\$\w+")
ALL = "*"  # a write whose table is not known (DDL): every copy is stale
DEFINED = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?(?:VIEW|TABLE|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)",
    re.I,
)

T = TypeVar("T")


def written_table(sql: str) -> str:
    match = WRITTEN_TABLE.match(sql)
    return match.group(1).lower() if match else ALL


class Reader:
    """The DuckDB connection a store's queries run in."""

    def __init__(self, db: sqlite3.Connection, store_file: Path | None = None):
        self.db = db
        self.store_file = store_file  # beside it, big tables' copies are saved (bases.py); None: in memory
        self.bases: dict[str, tuple[Path, ds.Dataset]] = {}  # a copy read from a base -> its file, dataset
        self.owner: str | None = None  # the store's id, which names its bases
        self.may_save = False  # this query's copies come from a state other processes see (no write open)
        self.catalog: Catalog | None = None  # made on the first query (duck.py)
        self.hardened = False  # filters/runner.py: this DuckDB reads no host file, its settings locked
        self.columns: dict[str, list[tuple[str, str]]] = {}
        self.loaded: dict[str, set[str] | None] = {}  # a current copy's columns (None: all of them)
        self.view_sql: dict[str, str] = {}  # a view made in DuckDB -> its SQL (the columns it reads)
        self.defined: dict[str, set[str]] = {}  # a view (or table) made in DuckDB -> the names it reads
        self.marks: dict[str, Mark] = {}  # a tracked table's copy -> where it stands (changes.py)
        self.behind: set[str] = set()  # tracked copies that must catch up before the next read
        self.tracked: set[str] | None = None  # the tables the file logs changes of (read once per schema)
        self.data_version = self._data_version()
        self.schema_version = self._schema_version()

    def _catalog(self) -> Catalog:
        if self.catalog is None:
            self.catalog = Catalog()
        return self.catalog

    @property
    def duck(self) -> duckdb.DuckDBPyConnection:
        return self._catalog().con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        cursor = self._catalog().cursor()
        for name, (_, dataset) in self.bases.items():  # registered Arrow objects are a connection's own
            cursor.register(f"_base_{name}", dataset)
        return cursor

    def isolate(self) -> None:
        """From here on the store's DuckDB is an instance of its own (its settings touch no other store)."""
        if self.catalog is not None and self.catalog.private:
            return
        self.close()
        self.catalog = Catalog(private=True)
        self.loaded.clear()
        self.marks.clear()
        self.behind.clear()
        self.bases.clear()
        self.defined.clear()
        self.view_sql.clear()

    def _data_version(self) -> int:
        return self.db.execute("PRAGMA data_version").fetchone()[0]

    def _schema_version(self) -> int:
        return self.db.execute("PRAGMA schema_version").fetchone()[0]

    def wrote(self, sql: str) -> None:
        """This connection changed what `sql` names (a DDL statement or a rollback: anything)."""
        table = written_table(sql)
        if table == ALL:
            self.stale()
        else:
            self.changed(table)

    def changed(self, table: str) -> None:
        """Rows of `table` changed: its copy catches up (a tracked table) or is taken again."""
        if table in self.marks:
            self.behind.add(table)
        else:
            self.loaded.pop(table, None)

    def stale(self, table: str | None = None) -> None:
        """The copies of `table` (None: of every table) no longer hold what the file does, and cannot
        catch up: a rollback took back rows they may hold (and the change log entries with them)."""
        for name in list(self.bases) if table is None else [table]:
            self._close_base(name)
        if table is None:
            self.loaded.clear()
            self.columns.clear()
            self.marks.clear()
            self.behind.clear()
            self.tracked = None
            self.schema_version = self._schema_version()  # this connection's own DDL is no news later
        else:
            self.loaded.pop(table, None)
            self.marks.pop(table, None)
            self.behind.discard(table)

    def prepare(self, sql: str) -> None:
        """Bring the copies of the tables `sql` reads up to date."""
        if WRITTEN_TABLE.match(sql):  # it would change a copy, and nothing in the file
            raise ValueError(f"a query only reads the store; write with Store.execute: {sql.strip()[:80]}")
        self._refresh(sql)

    def _refresh(self, sql: str) -> None:
        self._note_other_writers()
        names = self._tables_read(sql)
        text = " ".join([sql, *(VIEWS[n][0] for n in names if n in VIEWS), *(self.view_sql.get(n, "") for n in names)])
        with self._read_transaction():  # every copy and mark of this query from one state of the file
            for name in names:
                if name in self.behind:
                    self._catch_up(name)
                columns = self._wanted(name, text)
                if name not in self.loaded:
                    self._load(name, columns)
                elif self.loaded[name] is not None and (columns is None or not columns <= self.loaded[name]):
                    self._load(name, None if columns is None else columns | self.loaded[name])
        for view in names & VIEWS.keys():  # made over the copies as they now are
            self.duck.execute(VIEWS[view][0])

    def _note_other_writers(self) -> None:
        version = self._data_version()
        if version == self.data_version:
            return
        self.data_version = version
        schema = self._schema_version()
        if schema != self.schema_version:
            self.schema_version = schema
            self.stale()
        else:
            for table in list(self.loaded):
                self.changed(table)

    @contextmanager
    def _read_transaction(self) -> Iterator[None]:
        if self.db.in_transaction:  # a write transaction or Store.snapshot: already one view of the file
            yield  # (no base is saved from it: a write transaction's rows may yet be rolled back)
            return
        self.db.execute("BEGIN")
        self.may_save = True
        try:
            yield
        finally:
            self.may_save = False
            self.db.execute("COMMIT")

    def _catch_up(self, name: str) -> bool:
        """Bring a tracked copy up to the file; False (the copy dropped) when it must be taken whole."""
        self.behind.discard(name)
        declared, held = self._table_columns(name), self.loaded[name]
        columns = [(c, d) for c, d in declared if held is None or c in held]
        gone = f"_gone_{name}" if name in self.bases else None
        mark = catch_up(self.db, self.duck, name, columns, f"_copy_{name}", self.marks[name], gone)
        if mark is not None and mark != self.marks[name]:
            shown = self.duck.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]  # fetchone leaves it open
            mark = mark if shown == mark.rows else None  # a change the log missed
        if mark is None:
            self.stale(name)
            return False
        self.marks[name] = mark
        return True

    def _load_base(self, name: str) -> bool:
        """Read a big tracked table from its base file, caught up (bases.py); False when there is none
        and none can be saved (small table, a transaction open, a folder that takes no file)."""
        if not (self.store_file and self.may_save and self._is_tracked(name)):
            return False
        self.owner = self.owner or store_id(self.db)
        now = mark_now(self.db, name)
        if self.owner is None or now.rows < BASE_MIN_ROWS:
            return False
        base = usable_base(self.db, self.store_file, self.owner, name, self._table_columns(name), now)
        if base is None:
            return False
        self._open_base(name, base)
        if self._catch_up(name):
            return True
        base.path.unlink(missing_ok=True)  # it does not hold what the log says it holds: no one reads it again
        return False

    def _open_base(self, name: str, base: Base) -> None:
        """`name` as the view over its base and the rows fetched since (bases.py, base_view)."""
        dataset = open_base(base.path)  # registered: read with host files shut too
        self.duck.register(f"_base_{name}", dataset)
        self.bases[name] = (base.path, dataset)
        for statement in base_view(name, self._table_columns(name)):
            self.duck.execute(statement)
        self.marks[name], self.loaded[name] = base.mark, None

    def _close_base(self, name: str) -> None:
        if self.bases.pop(name, None) is not None and self.catalog is not None:
            self.duck.unregister(f"_base_{name}")

    def lost_a_base(self) -> bool:
        """A base this store reads was deleted (another process saved a newer one): its copies are dropped,
        and the query can run again."""
        lost = [name for name, (path, _) in self.bases.items() if not path.exists()]
        for name in lost:
            self.stale(name)
        return bool(lost)

    def _is_tracked(self, name: str) -> bool:
        if self.tracked is None:
            self.tracked = tracked_tables(self.db)
        return name in self.tracked

    def _wanted(self, name: str, text: str) -> set[str] | None:
        """The columns of `name` to copy for `text`: all (None) when it selects `*`, else all but the bulky
        ones it does not mention (so the next query seldom needs one more: each fetch costs a pass)."""
        if STAR.search(COUNT_STAR.sub("", text)):
            return None
        columns = {column for column, _ in self._table_columns(name)}
        return columns - {c for c in BULKY.get(name, ()) if not re.search(rf"\b{c}\b", text, re.I)}

    def _tables_read(self, sql: str) -> set[str]:
        try:  # the parser refuses parameters: any value stands in for them when only names are wanted
            names = table_names(PARAMETER.sub("NULL", sql))
        except duckdb.Error:
            # Not parsed (a lambda, a statement DuckDB cannot serialise): every table or view whose name
            # stands in the text as a word (a superset of those it reads).
            known = {*(t.lower() for t in self._stored_tables()), *VIEWS, *self.defined}
            names = {name for name in known if re.search(rf"\b{re.escape(name)}\b", sql, re.I)}
        uses = {**{view: set(tables) for view, (_, tables) in VIEWS.items()}, **self.defined}
        todo = list(names)
        while todo:  # a view's tables, and theirs
            for name in uses.get(todo.pop(), ()):
                if name not in names:
                    names.add(name)
                    todo.append(name)
        return names

    def _stored_tables(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]

    def _table_columns(self, name: str) -> list[tuple[str, str]]:
        if name not in self.columns:
            rows = self.db.execute(f'PRAGMA table_info("{name}")').fetchall()
            self.columns[name] = [(row[1], row[2] or "") for row in rows]
        return self.columns[name]

    def _load(self, name: str, wanted: set[str] | None) -> None:
        """Copy the `wanted` columns (None: all) of `name` into DuckDB as the view `name` over `_copy_<name>`
        (a view: the copy also holds each row's rowid, and columns joined on later go at its end)."""
        declared = self._table_columns(name)
        if not declared:
            return  # not a stored table: a view, an Arrow view or a typo DuckDB will name
        copy, held = f"_copy_{name}", self.loaded.get(name) or set()
        missing = [(c, d) for c, d in declared if (wanted is None or c in wanted) and c not in held]
        if name not in self.loaded and self._load_base(name):
            return
        if name not in self.loaded or not widen(self.db, self.duck, name, missing, copy):
            held = set()  # no copy, or its rows are no longer those: copy anew
            missing = [(c, d) for c, d in declared if wanted is None or c in wanted]
            copy_rows(self.db, self.duck, name, missing, copy)
            if self._is_tracked(name):
                self.marks[name] = mark_now(self.db, name)
        now = {c for c, _ in missing} | held
        select = ", ".join(f'"{column}"' for column, _ in declared if column in now)  # the table's own order
        self.duck.execute(f'CREATE OR REPLACE VIEW "{name}" AS SELECT {select} FROM "{copy}"')
        self.loaded[name] = None if len(now) == len(declared) else now

    def define(self, sql: str, params: list[Any] | None = None) -> None:
        """A statement for DuckDB's side alone (a setting, a view or temp table over the copies): a view
        remembers the tables it reads, so a query naming the view refreshes them."""
        written = written_table(sql)
        if written != ALL and written in self._stored_tables():  # a copy would change, and nothing in the file
            raise ValueError(f"write a stored table with Store.execute: {sql.strip()[:80]}")
        self._refresh(sql)
        self.duck.execute(sql, params or [])
        match = DEFINED.match(sql)
        if match:
            self.defined[match.group(1).lower()] = self._tables_read(sql) - {match.group(1).lower()}
            self.view_sql[match.group(1).lower()] = sql

    def query(self, sql: str, params: list[Any] | None = None) -> duckdb.DuckDBPyConnection:
        return self._run(sql, lambda: self.duck.execute(sql, params or []))

    def arrow_table(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        return self._run(sql, lambda: self.duck.sql(sql, params=params or None).to_arrow_table())

    def _run(self, sql: str, run: Callable[[], T]) -> T:
        """`run` the query once its copies are current; once more if a base it read was deleted meanwhile."""
        self.prepare(sql)
        try:
            return run()
        except duckdb.Error:
            if not self.lost_a_base():
                raise
        self.prepare(sql)
        return run()

    def close(self) -> None:
        if self.catalog is not None:
            self.catalog.close()
            self.catalog = None
