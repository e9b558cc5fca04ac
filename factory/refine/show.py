"""`factory show RUN_DIR ID`: one trajectory, readable, with mistakes marked."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import FactoryError
from ..store import Store

RED, GREEN, DIM, RESET = "\033[31m", "\033[32m", "\033[2m", "\033[0m"


def load_trajectory_row(run_dir: str | Path, trajectory_id: str) -> dict:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query(
            "SELECT trajectory_id, persona_id, verified, reason, conversations, stats, llm_calls FROM trajectories "
            "WHERE trajectory_id = ? OR persona_id = ?",
            [trajectory_id, trajectory_id],
        )
    if not rows:
        raise FactoryError(f"no trajectory '{trajectory_id}' in {run_dir} (use a trajectory id or a persona id)")
    keys = ("trajectory_id", "persona_id", "verified", "reason", "conversations", "stats", "llm_calls")
    return dict(zip(keys, rows[0]))


def format_trajectory(row: dict, color: bool = False) -> str:
    paint = (lambda code, text: f"{code}{text}{RESET}") if color else (lambda code, text: text)
    status = "verified" if row["verified"] else f"not verified ({row['reason']})"
    lines = [f"{row['trajectory_id']}  persona {row['persona_id']}  {status}  llm calls: {row['llm_calls']}"]
    if row["stats"]:
        stats = json.loads(row["stats"])
        lines.append(f"turns {stats.get('turns')}, errors {stats.get('errors_by_type')}, corrections {stats.get('corrections')}")
        provenance = stats.get("provenance") or {}
        if provenance:  # where the row came from: who wrote the world, who played it, who judged it
            shown = ("script_source", "trajectory_source", "dm_evaluation")
            lines.append("  ".join(f"{key} {provenance[key]}" for key in shown if key in provenance))
    for turn in json.loads(row["conversations"] or "[]"):
        if turn["from"] == "human":
            lines.append(paint(DIM, f"[human] {turn['value']}"))
        elif "error" in turn:
            error = turn["error"]
            lines.append(paint(RED, f"[gpt ✗ {error['type']} error, loss=false] {turn['value']}"))
        else:
            lines.append(paint(GREEN, f"[gpt ✓ loss={str(turn['loss']).lower()}] {turn['value']}"))
    return "\n".join(lines)
