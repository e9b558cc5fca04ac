"""What one Ray worker runs: a stage's own single-process driver on one shard, in the shard's run folder.

`run_shard(job)` checks that this node sees the driver's run folder (the probe token), then
calls the stage's `work(config, *args)` with a config whose run_dir is RUN_DIR/shards/<stage>-<k>
and whose `ray.shard` names the slice, so the driver keeps only its shard's items
(keys.shard_subset). On the driver's host the shard folder's store is the run's own (a link):
the shard writes where the run reads. On another node it is a store of its own, which the
driver merges when the shards end (merge.py: a WAL file is not shared between hosts). Ray is not imported
here: the function is plain, and cluster.py wraps it as a remote task.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..store import STORE_FILENAME
from .config import RayConfig, ShardSlice
from .plan import read_probe, shard_folder

# Set in a worker's environment, a shard on the driver's host keeps a store of its own, as on
# another node (tests of the merge path run on one host).
OWN_STORE_ENV = "FACTORY_SHARD_OWN_STORE"


@dataclass
class ShardJob:
    stage: str
    index: int
    count: int
    run_dir: Path  # absolute: the same path on every node
    probe_token: str
    cwd: Path  # the driver's working folder: relative paths in the config (task files, prompts) are read from it
    config: Any  # the run config; run_dir and ray.shard are set here for the shard
    work: Callable[..., dict[str, Any]]  # the stage's shard function: (config, *args) -> counts
    args: tuple = field(default_factory=tuple)
    driver_host: str = field(default_factory=socket.gethostname)

    @property
    def name(self) -> str:
        return f"{self.stage}-{self.index}"


def run_shard(job: ShardJob) -> dict[str, Any]:
    """Run one shard; returns its index, the stage's counts, and the CPU and wall seconds it took."""
    check_visible(job)
    if job.cwd.is_dir():
        os.chdir(job.cwd)
    folder = shard_folder(job.run_dir, job.stage, job.index)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "worker.pid").write_text(f"{os.getpid()}\n")  # which process holds the shard (tests kill it)
    if socket.gethostname() == job.driver_host and not os.environ.get(OWN_STORE_ENV):
        link_run_store(folder, job.run_dir)
    shard = RayConfig(shard=ShardSlice(index=job.index, count=job.count))
    config = job.config.model_copy(update={"run_dir": folder, "ray": shard})
    cpu_before, started = cpu_seconds(), time.monotonic()
    counts = job.work(config, *job.args)
    return {
        "index": job.index,
        "counts": counts,
        "cpu_s": cpu_seconds() - cpu_before,
        "wall_s": time.monotonic() - started,
        "node": socket.gethostname(),
    }


def link_run_store(folder: Path, run_dir: Path) -> None:
    """The shard folder's store becomes the run's store (SQLite follows the link; its WAL and lock
    files stay beside the run's file), unless the folder has a store of its own from another node."""
    link = folder / STORE_FILENAME
    if not link.exists() and not link.is_symlink():
        os.symlink(os.path.relpath(run_dir / STORE_FILENAME, folder), link)


def check_visible(job: ShardJob) -> None:
    """One line naming the path and the node when this node does not see the driver's run folder."""
    if read_probe(job.run_dir) != job.probe_token:
        raise FactoryError(
            f"shard {job.name}: run folder {job.run_dir} is not the driver's on node {socket.gethostname()}: "
            "put the run folder on a filesystem every Ray node mounts at the same path"
        )


def cpu_seconds() -> float:
    """CPU of this process and of its finished children (sandboxes, checker workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
