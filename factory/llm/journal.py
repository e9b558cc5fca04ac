"""The call journal: every attempt and every answer on disk the moment it happens.

The call log writes DuckDB in batches (calllog.py); between two flushes a
killed process would lose the answers it had paid for, and attempts that never
got an answer would not be counted at all. So each call also appends JSON lines
to a small file beside the store: `start` (the request's fixed columns), `try`
(just before each HTTP attempt) and `answer` (the row's result columns).

A line is copied into a shared mapping of the file: once copied it is in the
kernel's page cache and survives SIGKILL (not a power cut: an fsync per call
would cost more than the call). A copy, unlike os.write, makes no system call
and keeps the GIL, which the flush thread would otherwise take for milliseconds.
The file's blocks are allocated a chunk ahead (posix_fallocate), so lines still
land when the disk fills up under the run, and a mapped write cannot fault;
the unused tail reads as NUL bytes. Opening the call log replays what DuckDB
lacks (replay.py) and empties the file.
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from ..errors import StoreWriteError

CHUNK_BYTES = 16 * 2**20  # allocated ahead of the lines, so they still land when the disk fills up
ROTATE_BYTES = 64 * 2**20  # rewrite the file with only what DuckDB still lacks past this size
HINT = "; free space (or fix the folder's permissions) and run the same command again"


def journal_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.stem + ".calls.jsonl")


class Journal:
    """Appends lines and remembers, per request key, those DuckDB does not hold yet."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._pending: dict[str, list[bytes]] = {}  # key -> its lines not yet settled in DuckDB
        self._answered: dict[str, int] = {}  # key -> how many of its pending lines end with an answer
        self.fd, self._map, self._size, self._capacity = self._open(path, b"")

    def _open(self, path: Path, content: bytes) -> tuple[int, mmap.mmap, int, int]:
        """A new file holding `content`, with CHUNK_BYTES allocated and mapped past it."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as exc:
            raise StoreWriteError(f"cannot open the call journal {path}: {exc.strerror}{HINT}") from None
        try:
            os.write(fd, content)
            capacity = self._allocate(fd, len(content), len(content) + CHUNK_BYTES)
            return fd, mmap.mmap(fd, capacity), len(content), capacity
        except BaseException:
            os.close(fd)
            raise

    def _allocate(self, fd: int, start: int, capacity: int) -> int:
        try:  # real blocks, not a sparse file: a write into the mapping can then never fail
            os.posix_fallocate(fd, start, capacity - start)
        except OSError as exc:
            raise StoreWriteError(f"cannot write the call journal {self.path}: {exc.strerror}{HINT}") from None
        return capacity

    def _grow(self, need: int) -> None:
        capacity = self._allocate(self.fd, self._capacity, self._size + need + CHUNK_BYTES)
        self._map.close()
        self._map, self._capacity = mmap.mmap(self.fd, capacity), capacity

    def write(self, key: str, line: dict[str, Any], answer: bool = False) -> None:
        """Append one line (raises StoreWriteError when no space can be had for it).
        A copy into a shared file mapping: no system call, no GIL release, and the
        kernel keeps the page when the process is killed."""
        data = orjson.dumps(line) + b"\n"
        with self._lock:
            if self._map is None or self._size + len(data) > self._capacity:
                self._reopen_map() if self._map is None else self._grow(len(data))
            self._map[self._size : self._size + len(data)] = data
            self._size += len(data)
            lines = self._pending.setdefault(key, [])
            lines.append(data)
            if answer:
                self._answered[key] = len(lines)

    def _reopen_map(self) -> None:
        self._capacity = self._allocate(self.fd, self._size, self._size + CHUNK_BYTES)
        self._map = mmap.mmap(self.fd, self._capacity)

    def release_reserve(self) -> None:
        """Give the space allocated past the lines back (the run stops; the store may need it)."""
        with self._lock:
            self._unmap()

    def _unmap(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        os.ftruncate(self.fd, self._size)
        self._capacity = self._size

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
            content = b"".join(line for lines in self._pending.values() for line in lines)
            try:
                opened = self._open(fresh, content)
            except StoreWriteError:  # no room for the copy: keep appending to the old file
                fresh.unlink(missing_ok=True)
                return
            os.replace(fresh, self.path)  # atomic: a kill sees the old file or the new one
            self._map.close() if self._map is not None else None
            os.close(self.fd)
            self.fd, self._map, self._size, self._capacity = opened

    def close(self) -> None:
        """Close; empty the file when DuckDB holds everything it said."""
        with self._lock:
            if not self._pending:
                self._size = 0
            self._unmap()
            os.close(self.fd)


def journal_lines(path: Path) -> list[bytes]:
    """The lines written so far (the allocated tail past them reads as NUL bytes)."""
    data = path.read_bytes()
    return data.split(b"\0", 1)[0].splitlines()
