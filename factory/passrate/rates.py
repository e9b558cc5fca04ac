"""Pass rates per task from the `rollouts` table, in DuckDB SQL.

    table = pass_rates(store, "qwen")            # Arrow: task_id, n, n_correct, n_failed, pass_rate, uniform
    summary = summarize(store, "qwen", 0.3)      # totals, histogram, uniform groups, tasks kept
    summary = summarize(store, "qwen", 0.3, n=8) # only sample_index < 8 (a smaller --n than an earlier run)

Only scored rollouts count: `n` excludes failed requests and undecided checks
(`n_failed`). `uniform` says every scored rollout of the task has the same score:
a group RL learns nothing from (all right or all wrong). A task with no scored
rollout has a NULL pass_rate and uniform.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..store import Store
from .rows import id_table

SCHEMA = pa.schema([("task_id", pa.string()), ("n", pa.int64()), ("n_correct", pa.int64()), ("n_failed", pa.int64()),
                    ("pass_rate", pa.float64()), ("uniform", pa.bool_())])  # fmt: skip
RATES_SQL = """
    SELECT task_id, count(correct) AS n, count(*) FILTER (WHERE correct) AS n_correct,
           count(*) - count(correct) AS n_failed,
           (count(*) FILTER (WHERE correct)) / nullif(count(correct), 0) AS pass_rate,
           CASE WHEN count(score) > 0 THEN min(score) = max(score) END AS uniform
    FROM rollouts
    WHERE model = ? {only_tasks} {only_samples}
    GROUP BY task_id
"""
# Histogram buckets: all wrong and all right apart, since filters treat them apart.
BUCKETS = ("0", "(0, 0.25]", "(0.25, 0.5]", "(0.5, 0.75]", "(0.75, 1)", "1")
BUCKET_SQL = """CASE WHEN pass_rate = 0 THEN '0' WHEN pass_rate <= 0.25 THEN '(0, 0.25]'
    WHEN pass_rate <= 0.5 THEN '(0.25, 0.5]' WHEN pass_rate <= 0.75 THEN '(0.5, 0.75]'
    WHEN pass_rate < 1 THEN '(0.75, 1)' ELSE '1' END"""


def rates_sql(task_ids: list[str] | None, n: int | None = None) -> str:
    """`n`: count only sample_index < n, so that rollouts left from an earlier, larger --n do not count."""
    only = "AND task_id IN (SELECT task_id FROM wanted_tasks)" if task_ids is not None else ""
    samples = f"AND sample_index < {int(n)}" if n is not None else ""  # int(): only a number reaches the SQL
    return RATES_SQL.format(only_tasks=only, only_samples=samples)


def pass_rates(store: Store, model: str, task_ids: list[str] | None = None, n: int | None = None) -> pa.Table:
    """One row per task with rollouts of `model` (only `task_ids`, and samples 0..n-1, when given), by task_id."""
    with store.arrow_view("wanted_tasks", id_table(task_ids or [])):
        rows = store.query(f"{rates_sql(task_ids, n)} ORDER BY task_id", [model])
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, row)) for row in rows], schema=SCHEMA)


def summarize(
    store: Store, model: str, threshold: float = 0.3, task_ids: list[str] | None = None, n: int | None = None
) -> dict[str, Any]:
    """Totals over the tasks' pass rates (samples 0..n-1 when `n` is given); `kept`: scored tasks with
    pass_rate <= threshold."""
    with store.arrow_view("wanted_tasks", id_table(task_ids or [])):
        rates = rates_sql(task_ids, n)
        (tasks, scored, failed, mean, uniform, all_right, all_wrong, kept, unscored) = store.query(
            f"""
            WITH rates AS ({rates})
            SELECT count(*), coalesce(sum(n), 0), coalesce(sum(n_failed), 0), avg(pass_rate),
                   count(*) FILTER (WHERE uniform), count(*) FILTER (WHERE pass_rate = 1),
                   count(*) FILTER (WHERE pass_rate = 0), count(*) FILTER (WHERE pass_rate <= ?),
                   count(*) FILTER (WHERE n = 0)
            FROM rates
            """,
            [model, threshold],
        )[0]
        histogram = dict(
            store.query(
                f"WITH rates AS ({rates}) SELECT {BUCKET_SQL}, count(*) FROM rates WHERE n > 0 GROUP BY 1", [model]
            )
        )
    return {
        "model": model, "tasks": tasks, "rollouts": scored + failed, "scored": scored, "failed": failed,
        "mean_pass_rate": mean, "histogram": {bucket: histogram.get(bucket, 0) for bucket in BUCKETS},
        "uniform": uniform, "all_right": all_right, "all_wrong": all_wrong, "unscored_tasks": unscored,
        "threshold": threshold, "kept": kept,
    }  # fmt: skip
