"""RUN_DIR/shards/plan.json: each stage's shard count and key, fixed at the stage's first run.

A rerun with another --shards keeps the recorded count and says so: an item's shard is its key's
hash modulo the count, and its cached answers are in that shard's store, so changing the count
would send answered requests again. The probe file beside it lets each shard check that it sees
the same run folder as the driver (a shared filesystem).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from ..errors import FactoryError

SHARDS_DIR = "shards"


def shards_folder(run_dir: Path) -> Path:
    return Path(run_dir) / SHARDS_DIR


def shard_folder(run_dir: Path, stage: str, index: int) -> Path:
    """A shard's own run folder: its store, call log and status, as a single-process run has them."""
    return shards_folder(run_dir) / f"{stage}-{index}"


def plan_path(run_dir: Path) -> Path:
    return shards_folder(run_dir) / "plan.json"


def shard_count(
    run_dir: Path, stage: str, key: str, asked: int | None, cluster_cpus: Callable[[], int]
) -> tuple[int, str | None]:
    """The stage's shard count and, when it differs from the one asked, a line saying the plan's is kept."""
    plans = read_plans(run_dir)
    recorded = plans.get(stage)
    if recorded is not None:
        count = int(recorded["count"])
        if asked is not None and asked != count:
            return count, (
                f"shards: {plan_path(run_dir)} has {count} {stage} shards; keeping them, not the "
                f"{asked} asked (each shard's store holds the answers of its keys)"
            )
        return count, None
    count = asked or max(1, cluster_cpus())
    plans[stage] = {"stage": stage, "count": count, "key": f"sha256({key}) mod {count}"}
    write_json(plan_path(run_dir), plans)
    return count, None


def read_plans(run_dir: Path) -> dict:
    path = plan_path(run_dir)
    if not path.exists():
        return {}
    try:
        plans = json.loads(path.read_text())
        if not isinstance(plans, dict) or not all(isinstance(p, dict) and "count" in p for p in plans.values()):
            raise ValueError("expected {stage: {count, key}}")
        return plans
    except (OSError, ValueError) as exc:
        raise FactoryError(
            f"shard plan {path} is unreadable ({exc}): fix or delete it (deleting it re-plans)"
        ) from None


def write_probe(run_dir: Path) -> str:
    """A fresh token in RUN_DIR/shards/probe: a shard that reads it back sees this run folder."""
    token = uuid.uuid4().hex
    write_json(shards_folder(run_dir) / "probe", {"token": token})
    return token


def read_probe(run_dir: Path) -> str | None:
    try:
        return json.loads((shards_folder(run_dir) / "probe").read_text()).get("token")
    except (OSError, ValueError, AttributeError):
        return None


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(partial, path)  # readers see the old file or the new one, never half of one
