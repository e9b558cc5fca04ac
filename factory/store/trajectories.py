"""The one writer of `trajectories` rows: the refine and coa paths both store through it.

A path hands over the columns only it knows (ids, verdict, spend; for coa the AFM single string,
the answer and its check); the turns, their conversations form, the stats JSON and the counts kept
as columns come from the trajectory and its `TrajectoryStats`, NULL for a failed row that has none.
"""

from __future__ import annotations

import json
from typing import Any

from ..records import Trajectory, TrajectoryStats, to_conversations
from .db import Store, utcnow
from .derived import upsert_trajectory

TURN_COLUMNS = ("turns", "conversations", "n_turns", "n_errors", "n_corrections")


def write_trajectory(
    store: Store,
    row: dict[str, Any],
    trajectory: Trajectory | None = None,
    stats: TrajectoryStats | None = None,
    tool_tags: tuple[str, ...] = (),
) -> None:
    """Insert or replace one trajectory row (its derived columns computed in the same statement; `tool_tags`:
    the AFM tags whose bodies are tool inputs, for a row with an AFM completion)."""
    stats = stats or TrajectoryStats()
    values = {**row, **turn_columns(trajectory, stats), "stats": stats.to_json(), "created_at": utcnow()}
    upsert_trajectory(store, values, tool_tags)


def turn_columns(trajectory: Trajectory | None, stats: TrajectoryStats) -> dict[str, Any]:
    if trajectory is None:
        return dict.fromkeys(TURN_COLUMNS)
    return {
        "turns": json.dumps([turn.stored() for turn in trajectory.turns]),
        "conversations": json.dumps(to_conversations(trajectory.turns)),
        "n_turns": len(trajectory.turns),
        **stats.mistake_columns(),
    }
