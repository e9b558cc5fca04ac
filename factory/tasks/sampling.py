"""Pick tasks: a seeded, order-free sample, and the task list a command runs on."""

from __future__ import annotations

import hashlib

from ..errors import ConfigError
from .loaders import load_tasks
from .model import Task, TaskError


def sample_tasks(tasks: list[Task], n: int, seed: int = 0) -> list[Task]:
    """n tasks picked by a seeded hash of their ids: the same picks whatever the input
    order, and a larger n keeps every task a smaller n picked."""
    if n < 0:
        raise TaskError(f"cannot sample {n} tasks")
    return sorted(tasks, key=lambda task: hashlib.sha256(f"{seed}:{task.id}".encode()).digest())[:n]


def select_tasks(path: str | None, domain: str | None, count: int | None, seed: int, missing: str) -> list[Task]:
    """The tasks a command runs on: those of `path` (of one domain if given), `count` of them
    sampled (all when None). `missing` is the error to show when no task file is named."""
    if not path:
        raise ConfigError(missing)
    tasks = load_tasks(path)
    if domain is not None:
        tasks = [task for task in tasks if task.domain == domain]
    if not tasks:
        raise ConfigError(f"{path}: no tasks" + (f" of domain {domain}" if domain else ""))
    return tasks if count is None else sample_tasks(tasks, min(count, len(tasks)), seed)
