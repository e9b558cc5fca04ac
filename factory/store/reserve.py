"""Disk set aside beside a store for the answers already paid for when the disk fills up.

The call log keeps one (calllog.py): when a write meets a full disk the store frees it, so the
answers still on the wire can be written while the batch stops. Best effort: a disk too full to set
it aside has none.
"""

from __future__ import annotations

import os
from pathlib import Path

RESERVE_BYTES = 16 << 20  # ~8,000 answers of 2 KB: what a batch has on the wire when the disk fills


class DiskReserve:
    def __init__(self, path: Path, disabled: bool = False):
        self.path = path
        self.disabled = disabled  # a read-only or in-memory store writes nothing
        self.held = False

    def keep(self) -> None:
        if self.disabled or self.held:
            return
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            finally:
                os.close(fd)
            self.held = True
        except OSError:
            self._remove()

    def release(self) -> bool:
        """Free it; True if it was held (a write that failed may then be tried again)."""
        held, self.held = self.held, False
        if held:
            self._remove()
        return held

    def _remove(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
