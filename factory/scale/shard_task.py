"""What one Ray worker runs: a stage's own single-process driver on one shard, in the shard's run folder.

`run_shard(job)` checks that this node sees the driver's run folder (the probe token), then
calls the stage's `work(config, *args)` with a config whose run_dir is RUN_DIR/shards/<stage>-<k>
and whose `ray.shard` names the slice, so the driver keeps only its shard's items
(keys.shard_subset) and resumes from that folder's store like any run. Ray is not imported
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
from .config import RayConfig, ShardSlice
from .plan import read_probe, shard_folder


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
