"""Read tasks from JSONL, parquet, a save_to_disk folder or a `datasets` object.

    tasks = load_tasks("../shared/data/tasks/math500.parquet")      # JSONL, parquet,
    tasks = load_tasks(dataset_or_folder, domain="qa", limit=100)   # a datasets object or folder

Bad input, by kind: a file that cannot be read as a whole (missing, wrong type,
a line that is not JSON, no question column) raises TaskError naming the file
and row. A row that parses but cannot become a task (no question text, a code
ground truth that is not JSON, a repeated id) is skipped and counted by reason;
`read_tasks` returns the counts, `load_tasks` logs them in one warning line, and
`strict=True` turns the first skip into a TaskError instead.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import FactoryError
from ..rows import dataset_label, dataset_rows, json_rows, load_from_disk, parquet_rows
from .model import DOMAINS, Task, TaskError
from .parsing import RowProblem, row_to_task

log = logging.getLogger(__name__)

# A task's question goes into every prompt of its run (the planner's, each tool agent's, the judge's): the
# longest real ones (competitive-programming statements) run to ~10,000 characters; past this a row is a
# broken file (a whole document in one cell), not a question, and would be paid for in every call.
MAX_QUESTION_CHARS = 32_000


@dataclass
class TaskSet:
    tasks: list[Task]
    skipped: Counter = field(default_factory=Counter)  # reason -> rows skipped
    first_problem: str | None = None  # "file row N: message" of the first skipped row


def load_tasks(src: str | Path | Any, domain: str | None = None, limit: int | None = None,
               strict: bool = False, split: str = "train") -> list[Task]:  # fmt: skip
    """Tasks from a JSONL/parquet file, a save_to_disk folder or a `datasets` object.

    domain: force "qa" | "math" | "code" (default: inferred per row).
    limit: stop after this many tasks. split: the split of a DatasetDict.
    """
    result = read_tasks(src, domain, limit, strict, split)
    if result.skipped:
        counts = ", ".join(f"{n} {reason}" for reason, n in result.skipped.most_common())
        log.warning("task rows skipped: %d (%s); first: %s", sum(result.skipped.values()), counts, result.first_problem)
    return result.tasks


def read_tasks(src: str | Path | Any, domain: str | None = None, limit: int | None = None,
               strict: bool = False, split: str = "train") -> TaskSet:  # fmt: skip
    """Like load_tasks, and also says which rows were skipped and why."""
    if domain is not None and domain not in DOMAINS:
        raise TaskError(f"unknown task domain '{domain}' (use one of: {', '.join(DOMAINS)})")
    if limit is not None and limit < 0:
        raise TaskError(f"limit must be >= 0, not {limit}")
    label, rows = open_rows(src, split)
    return collect(rows, label, domain, limit, strict)


def open_rows(src: str | Path | Any, split: str) -> tuple[str, Iterable[tuple[str, dict]]]:
    """(a label for the source, (place, row) pairs); the readers are shared with personas."""
    try:
        if not isinstance(src, (str, Path)):
            return dataset_label(src), dataset_rows(src, split, "dataset")[1]
        path = Path(src)
        if path.is_dir():
            return path.name, dataset_rows(load_from_disk(path), split, str(path))[1]
        if not path.exists():
            raise TaskError(f"{path}: no such task file or dataset folder")
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".json"):
            return path.name, json_rows(path)[1]
        if suffix == ".parquet":
            return path.name, parquet_rows(path)[1]
        raise TaskError(f"{path}: unsupported task file type '{suffix}' (use .jsonl, .parquet or a dataset folder)")
    except TaskError:
        raise
    except FactoryError as exc:  # the shared readers speak of files generally: same message, our type
        raise TaskError(str(exc)) from None


def collect(
    rows: Iterable[tuple[str, dict]], label: str, domain: str | None, limit: int | None, strict: bool
) -> TaskSet:
    result, seen = TaskSet([]), set()
    for place, row in rows:
        if limit is not None and len(result.tasks) >= limit:
            break
        try:
            task = row_to_task(row, place, label, domain)
            if len(task.question) > MAX_QUESTION_CHARS:
                problem = f"{len(task.question):,} characters (a question is at most {MAX_QUESTION_CHARS:,})"
                raise RowProblem("question too long", problem)
            if task.id in seen:
                raise RowProblem("duplicate id", f"id '{task.id}' appeared before")
        except RowProblem as problem:
            if strict:
                raise TaskError(f"{place}: {problem}") from None
            result.skipped[problem.reason] += 1
            result.first_problem = result.first_problem or f"{place}: {problem}"
            continue
        seen.add(task.id)
        result.tasks.append(task)
    return result
