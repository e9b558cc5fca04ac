"""Probe of the old-folder migration: copy every table of a factory.duckdb into a SQLite WAL file
through Arrow, and check row counts. The schema uses only VARCHAR, INTEGER, DOUBLE, BOOLEAN,
TIMESTAMP and JSON, so SQLite's TEXT / INTEGER / REAL with ISO timestamps and JSON text hold them.

    /tmp/storelab/venv/bin/python convert_probe.py outputs/demo/factory.duckdb /tmp/storelab/demo.sqlite
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import duckdb

SQLITE_TYPE = {"BIGINT": "INTEGER", "INTEGER": "INTEGER", "BOOLEAN": "INTEGER", "DOUBLE": "REAL", "FLOAT": "REAL"}


def is_nested(kind: str) -> bool:
    return kind.endswith("]") or kind.startswith(("STRUCT", "MAP"))


def as_sqlite_value(name: str, kind: str) -> str:
    """Timestamps as ISO text, JSON as its text, lists and structs as JSON text; the rest as they are."""
    if is_nested(kind):
        return f'to_json("{name}")::VARCHAR'
    return f'"{name}"::VARCHAR' if kind in ("TIMESTAMP", "JSON") else f'"{name}"'


def convert(source: Path, target: Path) -> dict:
    target.unlink(missing_ok=True)
    old = duckdb.connect(str(source), read_only=True)
    new = sqlite3.connect(target, isolation_level=None)
    new.execute("PRAGMA page_size=16384")
    new.execute("PRAGMA journal_mode=WAL")
    counts, nested, start = {}, set(), time.time()
    new.execute("BEGIN")
    for (table,) in old.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
        columns = old.execute(f"DESCRIBE {table}").fetchall()
        types = ", ".join(f'"{c[0]}" {SQLITE_TYPE.get(c[1], "TEXT")}' for c in columns)
        new.execute(f'CREATE TABLE "{table}" ({types})')
        nested.update(f"{table}.{c[0]} {c[1]}" for c in columns if is_nested(c[1]))
        select = ", ".join(as_sqlite_value(c[0], c[1]) for c in columns)
        rows = old.execute(f"SELECT {select} FROM {table}").fetchall()
        new.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(columns))})', rows)
        counts[table] = len(rows)
    new.execute("COMMIT")
    copied = {t: new.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in counts}
    new.close()  # checkpoints the WAL into the file, so its size below is the whole store
    return {"tables": len(counts), "rows": sum(counts.values()), "counts_match": copied == counts,
            "seconds": round(time.time() - start, 2), "duckdb_mb": round(source.stat().st_size / 2**20, 2),
            "sqlite_mb": round(target.stat().st_size / 2**20, 2), "nested_columns_as_json": sorted(nested)}  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(convert(Path(sys.argv[1]), Path(sys.argv[2]))))
