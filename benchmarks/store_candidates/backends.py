"""Store candidates behind one small interface, so lab.py measures each the same way.

Each backend: setup(folder), Writer(folder).insert(rows) commits rows (one commit per call),
count(folder) -> (rows, newest written_at) from a fresh reader, aggregate(folder) -> rows of
a typical call-log aggregate, files(folder) -> (file count, bytes).
"""

from __future__ import annotations

import glob
import json
import os
import random
import sqlite3
import time
import uuid
from pathlib import Path

import duckdb

_WORDS = [f"w{i:04x}" for i in range(4000)]  # ~2 KB answers of varied words: compresses like prose, not like "xxxx"
_RNG = random.Random(7)
BODIES = [json.dumps({"choices": [{"message": {"content": " ".join(_RNG.choices(_WORDS, k=330))}}],
                      "usage": {"total_tokens": 512}}) for _ in range(64)]  # fmt: skip
AGG = "SELECT kind, count(*), sum(tokens), round(sum(cost), 4), avg(length(body)) FROM {t} GROUP BY kind ORDER BY kind"


def make_rows(start: int, n: int, tag: str = "") -> list[dict]:
    now = time.time()
    return [
        {"id": i, "key": f"{tag}k{i}", "kind": ("dm", "player", "judge")[i % 3], "tokens": 512,
         "cost": 0.001, "written_at": now, "body": BODIES[i % 64]}
        for i in range(start, start + n)
    ]  # fmt: skip


def files(folder: Path) -> tuple[int, int]:
    paths = [p for p in Path(folder).rglob("*") if p.is_file()]
    return len(paths), sum(p.stat().st_size for p in paths)


class SqliteWal:
    """Candidate 2's call log: stdlib sqlite3, WAL journal, synchronous=NORMAL (a commit survives a
    process kill; only a power cut can lose the last commits)."""

    name = "sqlite_wal"

    @staticmethod
    def setup(folder: Path) -> None:
        con = SqliteWal._connect(folder)
        con.execute("CREATE TABLE IF NOT EXISTS calls (id INTEGER, key TEXT PRIMARY KEY, kind TEXT, tokens INTEGER,"
                    " cost REAL, written_at REAL, body TEXT)")  # fmt: skip
        con.close()

    @staticmethod
    def _connect(folder: Path, read_only: bool = False) -> sqlite3.Connection:
        path = Path(folder) / "calls.sqlite"
        uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
        con = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
        if not read_only:
            # 2 KB rows on SQLite's default 4 KiB pages fit one a page (half the file empty): bigger pages pack them
            con.execute(f"PRAGMA page_size={os.environ.get('SQLITE_PAGE_SIZE', '4096')}")
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
        return con

    class Writer:
        def __init__(self, folder: Path):
            self.con = SqliteWal._connect(folder)

        def insert(self, rows: list[dict]) -> None:
            self.con.execute("BEGIN IMMEDIATE")
            self.con.executemany(
                "INSERT INTO calls VALUES (:id, :key, :kind, :tokens, :cost, :written_at, :body)", rows
            )
            self.con.execute("COMMIT")

        def close(self) -> None:
            self.con.close()

    @staticmethod
    def count(folder: Path) -> tuple[int, float]:
        con = SqliteWal._connect(folder, read_only=True)
        try:
            return con.execute("SELECT count(*), coalesce(max(written_at), 0) FROM calls").fetchone()
        finally:
            con.close()

    @staticmethod
    def aggregate(folder: Path) -> list[tuple]:
        """DuckDB 2.0 cannot load sqlite_scanner (extensions pinned to 1.4.4): read through Arrow."""
        import pyarrow as pa

        con = SqliteWal._connect(folder, read_only=True)
        cur = con.execute("SELECT kind, tokens, cost, body FROM calls")
        names = [d[0] for d in cur.description]
        cols = list(zip(*cur.fetchall())) or [[]] * len(names)
        calls = pa.table(dict(zip(names, map(list, cols))))
        con.close()
        duck = duckdb.connect()
        duck.register("calls", calls)
        return duck.execute(AGG.format(t="calls")).fetchall()

    @staticmethod
    def integrity(folder: Path) -> str:
        con = SqliteWal._connect(folder, read_only=True)
        try:
            return con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()

    @staticmethod
    def aggregate_in_sqlite(folder: Path) -> list[tuple]:
        con = SqliteWal._connect(folder, read_only=True)
        try:
            return con.execute(AGG.format(t="calls")).fetchall()
        finally:
            con.close()


class ParquetParts:
    """Candidate 2's stage tables: each commit writes one Parquet part (temp name, then rename), so a
    reader never sees half a file and any number of writers (Ray shards) add parts side by side."""

    name = "parquet_parts"

    @staticmethod
    def setup(folder: Path) -> None:
        (Path(folder) / "calls").mkdir(parents=True, exist_ok=True)

    class Writer:
        def __init__(self, folder: Path):
            self.dir = Path(folder) / "calls"
            self.con = duckdb.connect()

        def insert(self, rows: list[dict]) -> None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            name = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.parquet"
            tmp = self.dir / f".{name}.tmp"
            pq.write_table(pa.Table.from_pylist(rows), tmp)
            os.rename(tmp, self.dir / name)

        def close(self) -> None:
            self.con.close()

    @staticmethod
    def _glob(folder: Path) -> str:
        return str(Path(folder) / "calls" / "*.parquet")

    @staticmethod
    def count(folder: Path) -> tuple[int, float]:
        if not glob.glob(ParquetParts._glob(folder)):
            return (0, 0.0)
        q = f"SELECT count(*), coalesce(max(written_at), 0) FROM read_parquet('{ParquetParts._glob(folder)}')"
        return duckdb.execute(q).fetchone()

    @staticmethod
    def aggregate(folder: Path) -> list[tuple]:
        return duckdb.execute(AGG.format(t=f"read_parquet('{ParquetParts._glob(folder)}')")).fetchall()


class DuckdbFile:
    """Candidate 3 / today's store: one DuckDB file. Readers in other processes need the write lock gone."""

    name = "duckdb_file"

    @staticmethod
    def setup(folder: Path) -> None:
        con = duckdb.connect(str(Path(folder) / "store.duckdb"))
        con.execute("CREATE TABLE IF NOT EXISTS calls (id BIGINT, key VARCHAR PRIMARY KEY, kind VARCHAR,"
                    " tokens BIGINT, cost DOUBLE, written_at DOUBLE, body VARCHAR)")  # fmt: skip
        con.close()

    class Writer:
        def __init__(self, folder: Path):
            self.con = duckdb.connect(str(Path(folder) / "store.duckdb"))

        def insert(self, rows: list[dict]) -> None:
            import pyarrow as pa

            self.con.register("batch", pa.Table.from_pylist(rows))
            self.con.execute("INSERT INTO calls SELECT id, key, kind, tokens, cost, written_at, body FROM batch")
            self.con.unregister("batch")

        def close(self) -> None:
            self.con.close()

    @staticmethod
    def count(folder: Path) -> tuple[int, float]:
        con = duckdb.connect(str(Path(folder) / "store.duckdb"), read_only=True)
        try:
            return con.execute("SELECT count(*), coalesce(max(written_at), 0) FROM calls").fetchone()
        finally:
            con.close()

    @staticmethod
    def aggregate(folder: Path) -> list[tuple]:
        con = duckdb.connect(str(Path(folder) / "store.duckdb"), read_only=True)
        try:
            return con.execute(AGG.format(t="calls")).fetchall()
        finally:
            con.close()


BACKENDS = {b.name: b for b in (SqliteWal, ParquetParts, DuckdbFile)}
