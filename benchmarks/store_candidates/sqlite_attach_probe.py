"""Can DuckDB run the store's SQL unchanged over a SQLite file? (docs/store_design.md, "The SQL engine")

Needs DuckDB 1.4.4 and its sqlite extension package (DuckDB 2.x cannot load it):
    python3 -m venv /tmp/storelab/venv14 && /tmp/storelab/venv14/bin/pip install duckdb==1.4.4 duckdb-ext-sqlite
    /tmp/storelab/venv14/bin/python sqlite_attach_probe.py /tmp/storelab/attach

Prints, for each statement shape the store uses, what the extension does with it; then two writer
processes and a reader process on one file; then the cost of opening a store this way.
"""

from __future__ import annotations

import datetime
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb

EXTENSION = (
    Path(duckdb.__file__).parent.parent / "duckdb_ext/extensions/v1.4.4/linux_amd64/sqlite_scanner.duckdb_extension"
)
SHAPES = [
    "INSERT INTO t VALUES ('a', true, now()::TIMESTAMP, '{\"x\": 1}', 2.5)",
    "INSERT OR REPLACE INTO t VALUES ('a', false, now()::TIMESTAMP, '{}', 1.0)",
    "INSERT INTO t VALUES ('a', false, NULL, '{}', 1.0) ON CONFLICT (k) DO UPDATE SET d = t.d + excluded.d",
    "UPDATE t SET d = 1 RETURNING k",
    "SELECT k, b, ts, j, typeof(b), typeof(ts), typeof(j) FROM t",
    "SELECT j->>'$.x' FROM t",
    "SELECT j.x FROM t",
    "SELECT k, arg_max(d, k) FROM t GROUP BY k QUALIFY row_number() OVER (ORDER BY k) < 3",
    "ALTER TABLE t ADD COLUMN extra VARCHAR",
]


def attached(path: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute(f"LOAD '{EXTENSION}'")
    con.execute(f"ATTACH '{path}' AS run (TYPE sqlite)")
    con.execute("USE run")
    return con


def shapes(folder: Path) -> None:
    path = folder / "shapes.sqlite"
    made = sqlite3.connect(path)  # declared types as the migrations would write them
    made.execute("PRAGMA journal_mode=WAL")
    made.execute("CREATE TABLE t (k VARCHAR PRIMARY KEY, b BOOLEAN, ts TIMESTAMP, j JSON, d DOUBLE)")
    made.commit()
    made.close()
    con = attached(path)
    for sql in SHAPES:
        try:
            print("ok    ", sql, "->", con.execute(sql).fetchall()[:2])
        except duckdb.Error as exc:
            print("refused", sql, "->", str(exc).splitlines()[0][:160])
    con.execute("CREATE TABLE made_by_duckdb (k VARCHAR, b BOOLEAN, ts TIMESTAMP, j JSON, l VARCHAR[])")
    con.execute("INSERT INTO made_by_duckdb VALUES ('a', true, ?, '{}', ['p', 'q'])", [datetime.datetime(2024, 1, 2)])
    print(
        "schema of a table DuckDB creates:",
        sqlite3.connect(path).execute("SELECT sql FROM sqlite_master WHERE name = 'made_by_duckdb'").fetchone()[0],
    )
    print("its row as sqlite3 reads it:", sqlite3.connect(path).execute("SELECT * FROM made_by_duckdb").fetchall())


def writer(path: Path, name: str, rows: int = 300) -> None:
    con, locked, started = attached(path), 0, time.time()
    for i in range(rows):
        while True:
            try:
                con.execute("BEGIN TRANSACTION")
                con.execute("INSERT INTO calls VALUES (?, ?)", [f"{name}-{i}", "x" * 2000])
                con.execute("COMMIT")
                break
            except duckdb.Error:
                locked += 1
                con.execute("ROLLBACK")
                time.sleep(0.01)
    print(f"writer {name}: {rows} commits in {time.time() - started:.2f} s, 'database is locked' {locked} times")


def reader(path: Path) -> None:
    con, seen = attached(path), []
    for _ in range(30):
        seen.append(con.execute("SELECT count(*) FROM calls").fetchone()[0])
        time.sleep(0.05)
    print("reader saw counts", seen[::5])


def processes(folder: Path) -> None:
    path = folder / "calls.sqlite"
    made = sqlite3.connect(path)
    made.execute("PRAGMA journal_mode=WAL")
    made.execute("CREATE TABLE calls (k VARCHAR PRIMARY KEY, body VARCHAR)")
    made.commit()
    made.close()
    me = [sys.executable, __file__, "--role"]
    jobs = [subprocess.Popen([*me, role, str(path)]) for role in ("w1", "w2", "read")]
    for job in jobs:
        job.wait()
    print("rows:", sqlite3.connect(path).execute("SELECT count(*), count(DISTINCT k) FROM calls").fetchone())


def open_cost(folder: Path) -> None:
    for _ in range(3):
        started = time.time()
        con = duckdb.connect(":memory:")
        connected = time.time()
        con.execute(f"LOAD '{EXTENSION}'")
        print(f"connect {connected - started:.3f} s, LOAD sqlite_scanner {time.time() - connected:.3f} s")


if __name__ == "__main__":
    if sys.argv[1] == "--role":
        role, path = sys.argv[2], Path(sys.argv[3])
        reader(path) if role == "read" else writer(path, role)
    else:
        out = Path(sys.argv[1])
        out.mkdir(parents=True, exist_ok=True)
        for name in ("shapes.sqlite", "calls.sqlite"):
            for leftover in out.glob(name + "*"):
                leftover.unlink()
        shapes(out)
        processes(out)
        open_cost(out)
