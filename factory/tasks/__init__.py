"""Tasks: the Task record, reading it from verl/AFM or plain QA rows, domain inference and sampling.

from factory.tasks import load_tasks, sample_tasks
tasks = load_tasks("../shared/data/tasks/math500.parquet")  # JSONL, parquet, a datasets object or folder
picked = sample_tasks(tasks, 20, seed=0)
"""

from .domains import infer_domain
from .loaders import TaskSet, load_tasks, open_rows, read_tasks
from .model import DOMAINS, Domain, Task, TaskError
from .parsing import RowProblem, row_to_task
from .sampling import sample_tasks, select_tasks

__all__ = [
    "DOMAINS",
    "Domain",
    "RowProblem",
    "Task",
    "TaskError",
    "TaskSet",
    "infer_domain",
    "load_tasks",
    "open_rows",
    "read_tasks",
    "row_to_task",
    "sample_tasks",
    "select_tasks",
]
