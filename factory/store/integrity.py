"""Telling a damaged or busy store apart from other errors, and checking a store before writing to it.

DuckDB checks a block's checksum only when it reads that block: a file with random bytes in a
table's data opens, answers `count(*)` from metadata, and accepts new writes. A file cut short
opens too, and answers whatever lies in its first part. So a store is read through once when
opened (every column of every table), unless it is exactly the file that the last clean close
by a writer left: a stamp beside it records that file's size, mtime and inode. The read costs
about 1 s per GB; it happens after a crash or a change made outside factory. (DuckDB's header
block count is no lower bound on the file's size: free blocks at its end need not be written.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb

from ..errors import FactoryError, StoreWriteError

# Substrings of DuckDB's messages for a file that is not what it wrote (1.x and 2.x).
DAMAGE_SIGNS = ("corrupt", "checksum", "could not read enough bytes", "not a valid duckdb database",
                "invalid database", "the file is not", "database file header")  # fmt: skip
LOCK_SIGNS = ("could not set lock", "conflicting lock")
# A write the disk refused (full, over quota); DuckDB may invalidate the database after one.
WRITE_SIGNS = ("no space left", "disk quota", "could not write", "file too large")


class StoreDamagedError(FactoryError):
    """The store file is damaged: reading it fails its checks, and nothing may be written to it."""


class StoreBusyError(FactoryError):
    """Another process holds the store's write lock (DuckDB lets one process in at a time)."""


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(sign in text for sign in DAMAGE_SIGNS)


def is_lock(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(sign in text for sign in LOCK_SIGNS)


def is_write_failure(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(sign in text for sign in WRITE_SIGNS)


def unwritable(path: Path, exc: BaseException) -> StoreWriteError:
    return StoreWriteError(
        f"cannot write the run store {path}: {first_line(exc)}; free space and run the same command again"
    )


def damaged(path: Path, exc: BaseException) -> StoreDamagedError:
    return StoreDamagedError(
        f"run store {path} is damaged ({first_line(exc)}); move it aside "
        f"(mv {path} {path}.damaged) and run again to start a new store"
    )


def busy(path: Path) -> StoreBusyError:
    return StoreBusyError(f"cannot open run store {path}: it is in use by another process (a run is writing it)")


def classify(path: Path, exc: BaseException, doing: str = "open") -> FactoryError:
    """The one-line error for a DuckDB error met while using the store at `path`."""
    if is_damage(exc):
        return damaged(path, exc)
    if is_lock(exc):
        return busy(path)
    return FactoryError(f"cannot {doing} run store {path}: {first_line(exc)}")


def _stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.clean")


def _file_id(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino}


def stamp_clean(path: Path) -> None:
    """Record the file a clean close left (best effort: a missing stamp only costs a read-through)."""
    try:
        _stamp_path(path).write_text(json.dumps(_file_id(path)))
    except OSError:
        pass


def known_clean(path: Path) -> bool:
    try:
        return json.loads(_stamp_path(path).read_text()) == _file_id(path)
    except (OSError, ValueError):
        return False


def forget_clean(path: Path) -> None:
    try:
        os.unlink(_stamp_path(path))
    except OSError:
        pass


def read_through(con: duckdb.DuckDBPyConnection) -> None:
    """Read every stored value once, so a block that fails its checksum raises now, before any write."""
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()
    for schema, table in tables:
        # hash() of each column cannot be answered from metadata, so every data block is read.
        con.execute(f'SELECT max(hash(COLUMNS(*))) FROM "{schema}"."{table}"').fetchall()
