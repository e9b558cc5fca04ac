"""The task files a run's own commands named: where a task's reference is read back from.

The store keeps a task's id and question, not its reference answer or tests, so whatever needs the
reference later (the RL hand-off's rows, the pass_rate filter's code-task check, the when-to-act pairs'
checker) reads it from the files the run's configs recorded: `coa.tasks`, `passrate.tasks` and the
`tasks` of a pass_rate filter.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store

RECORDED_FILES_SQL = """
    SELECT DISTINCT path FROM (
        SELECT json_extract_string(config, '$.coa.tasks') AS path FROM runs WHERE json_valid(config)
        UNION ALL SELECT json_extract_string(config, '$.passrate.tasks') FROM runs WHERE json_valid(config)
        UNION ALL SELECT json_extract_string(params, '$.tasks') FROM filter_configs WHERE kind = 'pass_rate'
    ) WHERE path IS NOT NULL ORDER BY 1"""


def recorded_task_files(store: Store) -> list[str]:
    """Task files the run's commands and pass_rate filters named, that exist from here."""
    return [path for (path,) in store.query(RECORDED_FILES_SQL) if Path(path).exists()]
