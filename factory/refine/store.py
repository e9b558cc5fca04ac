"""Reading and writing the refine path's tables (see migration 0005_refine)."""

from __future__ import annotations

import json
from typing import Any

from ..records import Trajectory
from ..store import Store, utcnow
from ..store.trajectories import write_trajectory
from .grounded_thoughts import check_thoughts
from .script import Script
from .verify import TrajectoryVerdict


def save_script(
    store: Store, script_id: str, persona_id: str, attempt: int, script: Script | None, problems: list[str]
):
    body = script.model_dump_json() if script is not None else None
    store.execute(
        "INSERT OR REPLACE INTO scripts VALUES (?, ?, ?, ?, ?, ?, ?)",
        [script_id, persona_id, attempt, body, script is not None and not problems, json.dumps(problems), utcnow()],
    )


def save_verdict(
    store: Store, trajectory_id: str, attempt: int, verdict: TrajectoryVerdict | None, reason: str, n_steps: int
):
    ok, rule, step = (verdict.ok, verdict.rule, verdict.failed_step) if verdict else (False, "llm_error", None)
    store.execute(
        "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [trajectory_id, attempt, ok, rule, step, reason, n_steps, utcnow()],
    )


def save_trajectory(store: Store, row: dict[str, Any], trajectory: Trajectory | None) -> None:
    """One final row per trajectory id: verified with its turns, or failed with its reason."""
    # The provenance (judging mode, script source, calls) rides in the stats JSON: a dataset can keep or drop by it.
    stats = None
    if trajectory is not None:
        update = {"provenance": trajectory.provenance, **thought_stats(store, row, trajectory)}
        stats = trajectory.stats().model_copy(update=update)
    write_trajectory(store, row, trajectory, stats)


def thought_stats(store: Store, row: dict[str, Any], trajectory: Trajectory) -> dict[str, Any]:
    """The trained thoughts' state assertions, judged against what the player read and the script's world
    replayed over the row's steps (grounded_thoughts.py); nothing when the row has no stored script."""
    found = store.lookup("SELECT script FROM scripts WHERE script_id = ?", [row.get("script_id")])  # per row: no copy
    if trajectory.source != "refine" or not found or found[0][0] is None:
        return {}
    steps = json.loads(row["steps"]) if row.get("steps") else None
    turns = [turn.model_dump() for turn in trajectory.turns]
    stats = check_thoughts(Script.model_validate_json(found[0][0]), turns, steps).stats()
    return {key: value for key, value in stats.items() if value is not None}


def finished_ids(store: Store) -> set[str]:
    return {r[0] for r in store.query("SELECT trajectory_id FROM trajectories")}


def refine_funnel(store: Store) -> dict[str, int]:
    """personas → scripts → verified scripts → trajectories → verified."""
    (personas,) = store.query("SELECT count(DISTINCT persona_id) FROM trajectories WHERE source = 'refine'")[0]
    scripts, verified_scripts = store.query(
        "SELECT count(DISTINCT persona_id), count(DISTINCT persona_id) FILTER (verified) FROM scripts"
    )[0]
    trajectories, verified = store.query(
        "SELECT count(*) FILTER (script_id IS NOT NULL), count(*) FILTER (verified) FROM trajectories"
        " WHERE source = 'refine'"
    )[0]
    return {"personas": personas, "scripts": scripts, "verified_scripts": verified_scripts,
            "trajectories": trajectories, "verified": verified}  # fmt: skip


def rule_losses(store: Store) -> dict[str, int]:
    """How many verifier verdicts each rule failed (every attempt counts)."""
    return dict(store.query("SELECT rule, count(*) FROM verdicts WHERE NOT ok GROUP BY 1 ORDER BY 2 DESC"))
