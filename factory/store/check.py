"""Refusing a damaged store before writing to it.

SQLite checks a page's structure when it reads it, so a query that meets damage fails with
"database disk image is malformed" (the one-line damage error). A writer could still add rows to a
file damaged where it has not read. So a writer's open checks the whole file (`PRAGMA
quick_check`, ~1 s per GB) unless it is exactly the file that the last clean close left: a stamp
beside it records that file's size, mtime and inode. A kill does not damage an SQLite file; the
check is for what happens outside factory (a disk error, a truncated copy).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path


def _stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.clean")


def _file_id(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "inode": stat.st_ino}


def stamp_clean(path: Path) -> None:
    """Record the file a clean close left (best effort: a missing stamp only costs a check)."""
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


def quick_check(db: sqlite3.Connection) -> None:
    """Raise sqlite3.DatabaseError naming the first problem when the file's structure is damaged."""
    problems = [row[0] for row in db.execute("PRAGMA quick_check(1)").fetchall()]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {problems[0]}")
