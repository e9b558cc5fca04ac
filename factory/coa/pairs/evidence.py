"""What the run knows about each task beyond its trajectory: the reference, and the closed-book pass rate.

The store keeps a task's id and question, not its reference, so the references come from the task
files: those `pairs.tasks` names, else the ones the run's own configs recorded (factory/tasks/recorded.py,
as the RL hand-off reads them). The closed-book pass rate is `factory passrate`'s, read from `rollouts`
under one model label.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...passrate.rates import pass_rates
from ...store import Store
from ...tasks import Task, read_tasks
from ...tasks.recorded import recorded_task_files
from .config import PairsConfig


@dataclass(frozen=True)
class ClosedBook:
    """A task's judged closed-book rollouts under one label (failed requests and undecided checks not counted)."""

    model: str
    n: int
    n_correct: int

    @property
    def pass_rate(self) -> float | None:
        return self.n_correct / self.n if self.n else None


def task_files(store: Store, settings: PairsConfig) -> list[str]:
    """The files `pairs.tasks` names, else those the run's configs recorded that exist from here."""
    if settings.tasks:
        return list(settings.tasks)
    return recorded_task_files(store)


def reference_tasks(paths: list[str], wanted: set[str]) -> dict[str, Task]:
    """The wanted tasks as the files hold them (the first file that has a task wins)."""
    found: dict[str, Task] = {}
    for path in paths:
        for task in read_tasks(path).tasks:
            if task.id in wanted:
                found.setdefault(task.id, task)
    return found


def has_reference(task: Task) -> bool:
    return bool(task.answers) or bool(task.tests)


def rollouts_label(store: Store, settings: PairsConfig, model: str) -> str:
    """`pairs.rollouts_model`, else the one label the run's rollouts hold, else the recall model's name."""
    if settings.rollouts_model:
        return settings.rollouts_model
    labels = store.query("SELECT DISTINCT model FROM rollouts")
    return labels[0][0] if len(labels) == 1 else model


def closed_book(store: Store, label: str, task_ids: list[str]) -> dict[str, ClosedBook]:
    rates = pass_rates(store, label, task_ids).to_pylist()
    return {row["task_id"]: ClosedBook(label, row["n"], row["n_correct"]) for row in rates}
