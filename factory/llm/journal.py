"""The call journal: every attempt and every answer on disk the moment it happens.

The call log writes DuckDB in batches (calllog.py); between two flushes a
killed process would lose the answers it had paid for, and attempts that never
got an answer would not be counted at all. So each call also appends JSON lines
to a small file beside the store: `start` (the request's fixed columns), `try`
(just before each HTTP attempt) and `answer` (the row's result columns). One
os.write on an O_APPEND descriptor per line: once write() returns, the line is
in the kernel and survives SIGKILL (not a power cut: an fsync per call would
cost more than the call). Opening the call log replays what DuckDB lacks
(replay.py) and empties the file.

Space for the lines is reserved ahead of the file's end (fallocate, KEEP_SIZE),
so answers still land when the disk fills up under the run.
"""

from __future__ import annotations

import ctypes
import errno
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from ..errors import StoreWriteError

RESERVE_BYTES = 16 * 2**20
ROTATE_BYTES = 64 * 2**20  # rewrite the file with only what DuckDB still lacks past this size
KEEP_SIZE, PUNCH_HOLE = 0x01, 0x02


def journal_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.stem + ".calls.jsonl")


def _fallocate():
    try:
        fallocate = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):  # not Linux: no reserve, the journal still works
        return None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    return fallocate


FALLOCATE = _fallocate()


class Journal:
    """Appends lines and remembers, per request key, those DuckDB does not hold yet."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._pending: dict[str, list[bytes]] = {}  # key -> its lines not yet settled in DuckDB
        self._answered: dict[str, int] = {}  # key -> how many of its pending lines end with an answer
        self._reserved_to = 0
        self.fd = self._open(path, os.O_TRUNC)

    def _open(self, path: Path, extra: int) -> int:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | extra, 0o644)
        except OSError as exc:
            raise StoreWriteError(f"cannot open the call journal {path}: {exc.strerror}") from None
        self._size = os.fstat(fd).st_size
        self._reserve(fd)
        return fd

    def _reserve(self, fd: int) -> None:
        """Keep RESERVE_BYTES allocated past the end; best effort (a full disk or no fallocate: none)."""
        if FALLOCATE is not None and self._size + RESERVE_BYTES // 2 > self._reserved_to:
            if FALLOCATE(fd, KEEP_SIZE, self._size, RESERVE_BYTES) == 0:
                self._reserved_to = self._size + RESERVE_BYTES

    def release_reserve(self) -> None:
        """Give the reserved space back (the run stops writing here; the store may need it)."""
        with self._lock:
            self._release_unlocked()

    def _release_unlocked(self) -> None:
        if FALLOCATE is not None and self._reserved_to > self._size:
            FALLOCATE(self.fd, KEEP_SIZE | PUNCH_HOLE, self._size, self._reserved_to - self._size)
        self._reserved_to = 0

    def write(self, key: str, line: dict[str, Any], answer: bool = False) -> None:
        data = orjson.dumps(line) + b"\n"
        with self._lock:
            try:
                written = os.write(self.fd, data)
            except OSError as exc:
                raise StoreWriteError(f"cannot write the call journal {self.path}: {exc.strerror}") from None
            if written != len(data):  # a short write to a file: the disk is full
                raise StoreWriteError(f"cannot write the call journal {self.path}: {os.strerror(errno.ENOSPC)}")
            self._size += written
            self._reserve(self.fd)
            lines = self._pending.setdefault(key, [])
            lines.append(data)
            if answer:
                self._answered[key] = len(lines)

    def marks(self, keys: list[str]) -> dict[str, int]:
        """How many lines of each key the rows being flushed cover (taken with those rows)."""
        with self._lock:
            return {key: self._answered[key] for key in keys if key in self._answered}

    def settled(self, marks: dict[str, int]) -> None:
        """DuckDB now holds these keys' rows: their lines up to the marks are no longer needed."""
        with self._lock:
            for key, count in marks.items():
                lines = self._pending.get(key)
                if lines is None:
                    continue
                del lines[:count]
                if self._answered.get(key) == count:
                    del self._answered[key]
                else:
                    self._answered[key] -= count
                if not lines:
                    del self._pending[key]

    def rotate_if_large(self) -> None:
        """Rewrite the file with only the unsettled lines, once it has grown past ROTATE_BYTES."""
        if self._size < ROTATE_BYTES:
            return
        fresh = self.path.with_name(self.path.name + ".new")
        with self._lock:
            try:
                fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, b"".join(line for lines in self._pending.values() for line in lines))
                finally:
                    os.close(fd)
                os.replace(fresh, self.path)  # atomic: a kill sees the old file or the new one
            except OSError:  # no room for the copy: keep appending to the old file
                fresh.unlink(missing_ok=True)
                return
            os.close(self.fd)
            self._reserved_to = 0
            self.fd = self._open(self.path, 0)

    def close(self) -> None:
        """Close; empty the file when DuckDB holds everything it said."""
        with self._lock:
            self._release_unlocked()
            if not self._pending:
                os.ftruncate(self.fd, 0)
            os.close(self.fd)

    @property
    def pending_keys(self) -> int:
        return len(self._pending)
