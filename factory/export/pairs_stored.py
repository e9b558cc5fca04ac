"""Pairs a stage stored in `preference_pairs` (migration 0014; e.g. coa "when to act"), in the export's splits.

A stored pair follows its trajectory: it is exported when that trajectory is (verified, kept by every
filter) and in the same split, so no task's pair trains while its trajectory is held out. A pair without
a trajectory (a closed-book question answered from pass-rate rollouts) follows its task group: the split
of the group's kept trajectories, else the group's hash with the selection's own cut (selection.py), the
split a trajectory of that task would get. Rows a stage wrote wrong are counted, never raised: a
malformed side, or neither side.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterator

from ..store import Store
from .options import ExportOptions
from .pairs_record import Pair, messages_problem, turn_messages
from .selection import hashed_split_sql, split_cut_sql

NOT_EXPORTED = "stored pair: its trajectory is not exported (unverified or dropped by a filter)"
NO_SPLIT = "stored pair: its task group's split holds no kept trajectory"
COLUMNS = "pair_id, kind, source, task_id, trajectory_id, prompt, chosen, rejected"


def placed_sql(selection: str, options: ExportOptions) -> str:
    """Every stored pair with the split it follows (NULL: its trajectory is not exported)."""
    return f"""
        WITH sel AS (SELECT DISTINCT trajectory_id, group_key, split FROM ({selection})),
             groups AS (SELECT group_key, max(split) AS split FROM sel GROUP BY 1)
        SELECT t.pair_id, t.kind, t.source, t.task_id, t.trajectory_id, t.prompt, t.chosen, t.rejected,
               CASE WHEN t.trajectory_id IS NOT NULL THEN s.split
                    ELSE coalesce(g.split, {hashed_split_sql(options.validation)}) END AS split
        FROM (SELECT *, NULL::VARCHAR AS script_id, NULL::VARCHAR AS persona_id FROM preference_pairs) t
             LEFT JOIN sel s ON s.trajectory_id = t.trajectory_id
             LEFT JOIN groups g ON t.trajectory_id IS NULL AND g.group_key = t.task_id
             CROSS JOIN ({split_cut_sql(options.validation)}) b"""


def count_unplaced(store: Store, selection: str, options: ExportOptions, skipped: Counter) -> None:
    """Count once, before the splits are written, the stored pairs no split of this export will hold."""
    (unexported, no_split) = store.query(f"""
        SELECT count(*) FILTER (split IS NULL),
               count(*) FILTER (split IS NOT NULL AND split NOT IN (SELECT DISTINCT split FROM ({selection})))
        FROM ({placed_sql(selection, options)})""")[0]
    for reason, n in ((NOT_EXPORTED, unexported), (NO_SPLIT, no_split)):
        if n:
            skipped[reason] += n


def stored_pairs(store: Store, selection: str, options: ExportOptions, split: str, skipped: Counter) -> Iterator[Pair]:
    """The split's stored pairs, by pair id; malformed rows are counted in `skipped` and left out."""
    query = f"SELECT {COLUMNS} FROM ({placed_sql(selection, options)}) WHERE split = '{split}' ORDER BY pair_id"
    for batch in store.arrow_batches(query):
        for row in batch.to_pylist():
            pair, problem = parse_pair(row)
            if problem:
                skipped[f"stored pair: {problem}"] += 1
            else:
                yield pair


def parse_pair(row: dict[str, Any]) -> tuple[Pair | None, str | None]:
    """A stored row as a Pair, or why it is not one (one short phrase, the same for every such row)."""
    try:
        sides = {
            name: json.loads(row[name]) if row[name] is not None else None for name in ("prompt", "chosen", "rejected")
        }
    except (TypeError, ValueError):
        return None, "prompt, chosen or rejected is not JSON"
    if sides["chosen"] is None and sides["rejected"] is None:
        return None, "neither side is stored"
    problem = messages_problem(sides["prompt"], "prompt") or next(
        (messages_problem(sides[s], s, assistant=True) for s in ("chosen", "rejected")
         if sides[s] is not None and messages_problem(sides[s], s, assistant=True)), None)  # fmt: skip
    if problem:
        return None, problem
    sides = {name: turn_messages(value) if value else None for name, value in sides.items()}  # role and content
    missing = None if sides["chosen"] and sides["rejected"] else "one side only (a KTO row)"
    pair = Pair(row["pair_id"], row["kind"] or "stored", row["source"] or "", sides["prompt"], sides["chosen"],
                sides["rejected"], task_id=row["task_id"], trajectory_id=row["trajectory_id"], missing=missing)  # fmt: skip
    return pair, None
