"""The driver of a sharded stage: plan, run every shard on Ray, merge remote shards' stores, summarize.

    outcome = run_on_ray(config, "passrate", "task id", work, (settings, policy), finish)

`work(shard_config, *args)` runs in each worker (the stage's own driver on its slice, returning
counts; on this host it writes the run's store itself); `finish(config, run, counts)` runs here after the merge, with the run's store open, and
returns what the single-process driver returns, so the commands print the same lines.
RUN_DIR/shards/last.json keeps each shard's counts, node, CPU and wall seconds of the last run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..run import Run, open_run
from ..store import STORE_FILENAME
from . import cluster
from .merge import merge_shard
from .plan import shard_count, shard_folder, shards_folder, write_json, write_probe
from .shard_task import ShardJob


def run_on_ray(
    config: Any,
    stage: str,
    key: str,
    work: Callable[..., dict],
    args: tuple,
    finish: Callable[[Any, Run, list[dict]], Any],
    progress: bool = True,
) -> Any:
    run_dir = Path(config.run_dir).resolve()  # the workers' working folder is not ours
    config = config.model_copy(update={"run_dir": run_dir})
    cpus = cluster.connect(config.ray.address)
    count, note = shard_count(run_dir, stage, key, config.ray.shards, lambda: cpus)
    if note:
        print(note, file=sys.stderr)
    token = write_probe(run_dir)
    jobs = [ShardJob(stage, index, count, run_dir, token, Path.cwd(), config, work, args) for index in range(count)]
    with open_run(run_dir, stage, config) as run:
        results, failures = cluster.run_shards(jobs, config.ray.max_retries, progress)
        merging = time.monotonic()
        merge_shards(run, stage, count)  # a failed remote shard's answers come home too: nothing answered is lost
        merge_s = round(time.monotonic() - merging, 3)
        if failures:
            more = f" (and {len(failures) - 1} more failed shards)" if len(failures) > 1 else ""
            raise FactoryError(f"{failures[0]}{more}; the rest are merged: rerun the same command to resume")
        results.sort(key=lambda result: result["index"])
        write_json(shards_folder(run_dir) / "last.json", {"stage": stage, "merge_s": merge_s, "shards": results})
        return finish(config, run, results)


def merge_shards(run: Run, stage: str, count: int) -> None:
    for index in range(count):
        path = shard_folder(run.run_dir, stage, index) / STORE_FILENAME
        if path.exists() and not path.is_symlink():  # a link is the run's own store
            merge_shard(run.store, path)


def summed(results: list[dict], same: tuple[str, ...] = ()) -> dict[str, Any]:
    """The shards' counts added up: numbers are summed, except those named in `same` (a setting every
    shard reports alike) and any other value, which are taken from the first shard."""
    total: dict[str, Any] = {}
    for result in results:
        for name, value in result["counts"].items():
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if number and name in total and name not in same:
                total[name] += value
            else:
                total.setdefault(name, value)
    return total
