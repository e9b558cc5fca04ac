"""Rollout rows in the store: which samples are done, and a buffered writer.

A slot is one (task_id, sample_index) for a model. Its row says how far it got:
- correct set: scored, done for good;
- completion set, correct NULL: the reply is stored but the checker could not
  decide (math-verify timed out, ...) - a rerun checks it again, with no request;
- completion NULL: the request failed - a rerun asks again (unless told not to).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..store import Store

COLUMNS = ("task_id", "model", "sample_index", "completion", "answer", "correct", "score", "detail",
           "request_hash", "created_at")  # fmt: skip
Slot = tuple[str, int]


@dataclass
class Unchecked:
    completion: str
    request_hash: str | None


@dataclass
class StoredSlots:
    scored: set[Slot]
    unchecked: dict[Slot, Unchecked]
    failed: set[Slot]


def stored_slots(store: Store, model: str) -> StoredSlots:
    scored = {(t, i) for t, i in store.query(
        "SELECT task_id, sample_index FROM rollouts WHERE model = ? AND correct IS NOT NULL", [model])}  # fmt: skip
    unchecked = {(t, i): Unchecked(text, key) for t, i, text, key in store.query(
        "SELECT task_id, sample_index, completion, request_hash FROM rollouts "
        "WHERE model = ? AND correct IS NULL AND completion IS NOT NULL", [model])}  # fmt: skip
    failed = {(t, i) for t, i in store.query(
        "SELECT task_id, sample_index FROM rollouts WHERE model = ? AND completion IS NULL", [model])}  # fmt: skip
    return StoredSlots(scored, unchecked, failed)


class RolloutWriter:
    """Rows go in as one Arrow insert per batch: a killed run loses at most one batch,
    and the LLM cache answers those requests again without calling the model."""

    def __init__(self, store: Store, batch: int = 64):
        self.store = store
        self.batch = batch
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        columns = {name: [row[name] for row in self.rows] for name in COLUMNS}
        self.store.insert_rows("rollouts", columns, verb="INSERT OR REPLACE")
        self.rows = []


def count_rollouts(store: Store, model: str, task_ids: list[str]) -> int:
    with store.arrow_view("wanted_tasks", id_table(task_ids)):
        return store.query(
            "SELECT count(*) FROM rollouts WHERE model = ? AND task_id IN (SELECT task_id FROM wanted_tasks)", [model]
        )[0][0]


def id_table(task_ids: list[str]) -> pa.Table:
    """Task ids as an Arrow table, to join against in SQL."""
    return pa.table({"task_id": pa.array(task_ids, pa.string())})
