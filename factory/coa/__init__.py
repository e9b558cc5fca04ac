"""factory.coa: the Chain-of-Agents path (tasks -> multi-agent run -> distilled trajectory)."""

from .tasks import Task, TaskError, TaskSet, load_tasks, read_tasks, sample_tasks

__all__ = ["Task", "TaskError", "TaskSet", "load_tasks", "read_tasks", "sample_tasks"]
