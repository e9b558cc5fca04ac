"""Telling a damaged, busy or full store apart from other errors, each as one line.

SQLite checks a page when it reads it: a file that is not a database fails on open ("file is
not a database"), damage inside one when the damaged page is read ("database disk image is
malformed"). `PRAGMA quick_check` reads every page on demand (`factory store check`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import FactoryError, StoreWriteError

DAMAGE_SIGNS = ("not a database", "malformed", "file is encrypted", "database corrupt")
LOCK_SIGNS = ("database is locked", "database table is locked")
# A write the disk refused (full, over quota): every committed row stays, the next write fails the same way.
FULL_BELOW_BYTES = 1 << 20  # free space under which a "full" store is a full disk
WRITE_SIGNS = ("database or disk is full", "no space left", "disk quota", "disk i/o error", "file too large")


class StoreDamagedError(FactoryError):
    """The store file is damaged: reading it fails its checks, and nothing may be written to it."""


class StoreBusyError(FactoryError):
    """Another process held the store's write lock longer than the busy timeout."""


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _has(exc: BaseException, signs: tuple[str, ...]) -> bool:
    text = str(exc).lower()
    return any(sign in text for sign in signs)


def is_damage(exc: BaseException) -> bool:
    return _has(exc, DAMAGE_SIGNS)


def is_lock(exc: BaseException) -> bool:
    return _has(exc, LOCK_SIGNS)


def is_write_failure(exc: BaseException) -> bool:
    return _has(exc, WRITE_SIGNS)


def unwritable(path: Path, exc: BaseException) -> StoreWriteError:
    return StoreWriteError(
        f"cannot write the run store {path}: {write_cause(path, exc)}; free space and run the same command again"
    )


def write_cause(path: Path, exc: BaseException) -> str:
    """SQLite says "database or disk is full" for both: say which, as the OS would."""
    cause = first_line(exc)
    if "database or disk is full" in cause.lower():
        try:
            stat = os.statvfs(path.parent)
        except OSError:
            return cause
        if stat.f_bavail * stat.f_frsize < FULL_BELOW_BYTES:
            return f"{os.strerror(errno.ENOSPC)} ({cause})"
    return cause


def damaged(path: Path, exc: BaseException) -> StoreDamagedError:
    return StoreDamagedError(
        f"run store {path} is damaged ({first_line(exc)}); move it aside "
        f"(mv {path} {path}.damaged) and run again to start a new store"
    )


def busy(path: Path) -> StoreBusyError:
    return StoreBusyError(f"cannot write run store {path}: another process held its write lock for too long")


def classify(path: Path, exc: BaseException, doing: str = "open") -> FactoryError:
    """The one-line error for an SQLite error met while using the store at `path`."""
    if is_damage(exc):
        return damaged(path, exc)
    if is_lock(exc):
        return busy(path)
    if is_write_failure(exc):
        return unwritable(path, exc)
    return FactoryError(f"cannot {doing} run store {path}: {first_line(exc)}")
