"""The only module that imports ray: connect, run the shard tasks, turn their failures into one line each."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

from ..errors import FactoryError, MissingExtraError
from ..store.errors import first_line
from .shard_task import ShardJob, run_shard

# Environment the workers need as the driver has it: where the code is, and the factory's own switches.
FORWARDED_ENV = ("PYTHONPATH",)
FORWARDED_PREFIX = "FACTORY_"


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError(
            "--ray needs the [ray] extra (ray is not installed): pip install 'factory[ray]'"
        ) from None
    return ray


def connect(address: str | None) -> int:
    """Join the cluster at `address` (None: RAY_ADDRESS if set, else start a local instance); its CPU count."""
    ray = import_ray()
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or "local"  # never an unnamed cluster found by chance
        local = {"include_dashboard": False} if address == "local" else {}
        try:
            ray.init(address=address, runtime_env={"env_vars": worker_env()}, log_to_driver=False, **local)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise FactoryError(f"cannot join the Ray cluster at {address}: {first_line(exc)}") from None
    return int(ray.cluster_resources().get("CPU", 1))


def worker_env() -> dict[str, str]:
    return {
        name: value for name, value in os.environ.items() if name in FORWARDED_ENV or name.startswith(FORWARDED_PREFIX)
    }


def run_shards(jobs: Iterable[ShardJob], max_retries: int, progress: bool) -> tuple[list[dict], list[str]]:
    """Run every shard as one Ray task (num_cpus=1; Ray reruns it when its worker is lost):
    (the finished shards' results, one line per failed shard)."""
    ray = import_ray()
    task = ray.remote(num_cpus=1, max_retries=max_retries)(run_shard)
    refs = {task.remote(job): job for job in jobs}
    results, failures = [], []
    pending = list(refs)
    with tqdm(total=len(pending), desc="shards", unit="shard", disable=not progress) as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                results.append(ray.get(done[0]))
            except Exception as exc:  # a shard's error, or its worker lost more often than max_retries
                failures.append(failure_line(refs[done[0]], exc, ray))
            bar.update(1)
    return results, failures


def failure_line(job: ShardJob, exc: Exception, ray: Any) -> str:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, FactoryError) and str(cause).startswith(f"shard {job.name}"):
        return str(cause)
    if isinstance(cause, FactoryError):
        return f"shard {job.name}: {cause}"
    if isinstance(exc, ray.exceptions.WorkerCrashedError | ray.exceptions.NodeDiedError):
        return f"shard {job.name}: its worker was lost ({type(exc).__name__}) more often than ray.max_retries allows"
    shown = cause if cause is not None else exc
    return f"shard {job.name}: {type(shown).__name__}: {first_line(shown)}"
