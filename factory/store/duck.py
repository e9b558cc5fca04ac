"""The DuckDB side of every store in a process: one DuckDB instance, a catalog per store.

Opening a DuckDB database costs ~20 ms and attaching an in-memory catalog to an open one ~0.3 ms;
a CLI call or a test opens many stores. So each store's copies live in a catalog of its own
(`ATTACH ':memory:'`) of one instance per process, reached by a connection whose default catalog
it is (`USE`), and only once the store is first queried. A store whose DuckDB must refuse host
files (filters run user SQL) gets an instance of its own instead: DuckDB's settings are the
instance's (Catalog.private).
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
import threading

import duckdb

_LOCK = threading.Lock()
_PROCESS: dict[str, object] = {"pid": None}  # the instance, and a connection to it that only parses
_NUMBERS = itertools.count()


def _connect() -> duckdb.DuckDBPyConnection:
    """A DuckDB instance whose copies spill past its memory limit under the temp folder, not into
    `.tmp` in the working folder (DuckDB's default)."""
    return duckdb.connect(
        config={"temp_directory": os.path.join(tempfile.gettempdir(), f"factory-duckdb-{os.getpid()}")}
    )


def _instance() -> duckdb.DuckDBPyConnection:
    if _PROCESS["pid"] != os.getpid():  # a forked child must not touch its parent's instance
        instance = _connect()
        _PROCESS.update(pid=os.getpid(), instance=instance, parser=instance.cursor())
    return _PROCESS["instance"]  # type: ignore[return-value]


def table_names(sql: str) -> set[str]:
    """The tables and views `sql` names (CTE names too). A SELECT is parsed into DuckDB's syntax tree
    (json_serialize_sql: parsing only; get_table_names also binds, and fails on a USING join of tables
    it does not have); other statements through get_table_names, on a connection with no tables (one
    that had a view by a name would leave it out). duckdb.Error when neither can."""
    with _LOCK:
        _instance()
        parser = _PROCESS["parser"]
        tree = json.loads(parser.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])  # type: ignore[attr-defined]
        if not tree.get("error"):
            return _base_tables(tree, set())
        return {name.lower() for name in parser.get_table_names(sql)}  # type: ignore[attr-defined]


def _base_tables(node: object, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if node.get("type") == "BASE_TABLE" and isinstance(node.get("table_name"), str):
            found.add(node["table_name"].lower())
        for value in node.values():
            _base_tables(value, found)
    elif isinstance(node, list):
        for value in node:
            _base_tables(value, found)
    return found


class Catalog:
    """A store's DuckDB connection, its default catalog holding that store's copies alone."""

    def __init__(self, private: bool = False):
        self.private = private
        with _LOCK:
            self.name = "memory" if private else f"store_{next(_NUMBERS)}"
            self.con = _connect() if private else _instance().cursor()
        if not private:
            self.con.execute(f"ATTACH ':memory:' AS {self.name}")
            self.con.execute(f"USE {self.name}")

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """Another connection onto the same catalog (for a stream read beside other queries)."""
        cursor = self.con.cursor()
        if not self.private:
            cursor.execute(f"USE {self.name}")
        return cursor

    def close(self) -> None:
        try:
            if not self.private:
                self.con.execute("USE memory")
                self.con.execute(f"DETACH {self.name}")  # its copies' memory goes back
        except duckdb.Error:
            pass
        self.con.close()
