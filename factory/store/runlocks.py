"""Which `running` runs are alive: each holds a lock on a file of its own while its process lives.

Several processes may write one store (Ray shards, two commands on one run folder), so a
`running` row that no process of ours knows is not proof of a dead run. A run's process holds
an exclusive `flock` on `runs/<run_id>.lock` beside the store; the kernel drops it when the
process ends, however it ends. A run whose lock can be taken is dead. flock locks belong to an
open file, so a second store object in the same process sees the lock held too. (flock is not
reliable on every network file system: a run folder on one should be written from one host.)
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class RunLocks:
    def __init__(self, store_path: Path):
        self.folder = store_path.parent / "runs"
        self.held_here: dict[str, int] = {}  # run_id -> the open lock file of a run this process runs
        self.in_memory = str(store_path) == ":memory:"

    def _path(self, run_id: str) -> Path:
        return self.folder / f"{run_id}.lock"

    def take(self, run_id: str) -> None:
        """This process runs `run_id` until release()."""
        if self.in_memory:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path(run_id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.held_here[run_id] = fd

    def release(self, run_id: str) -> None:
        fd = self.held_here.pop(run_id, None)
        if fd is None:
            return
        try:
            os.unlink(self._path(run_id))
        except OSError:
            pass
        os.close(fd)

    def held(self, run_id: str) -> bool:
        """Whether a live process (this one or another) runs `run_id`."""
        if run_id in self.held_here or self.in_memory:
            return True
        try:
            fd = os.open(self._path(run_id), os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return False  # no lock file: its process never took one or released it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock we took
        return False

    def close(self) -> None:
        for run_id in list(self.held_here):
            self.release(run_id)
