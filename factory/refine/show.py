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
            f"SELECT {', '.join(ROW_KEYS)} FROM trajectories WHERE trajectory_id = ? OR persona_id = ?",
            [trajectory_id, trajectory_id],
        )
    if not rows:
        raise FactoryError(f"no trajectory '{trajectory_id}' in {run_dir} (use a trajectory id or a persona id)")
    return dict(zip(ROW_KEYS, rows[0]))


ROW_KEYS = ("trajectory_id", "persona_id", "verified", "reason", "conversations", "stats", "llm_calls", "source",
            "task_id", "final_answer", "correct")  # fmt: skip


def stats_lines(row: dict, stats: dict) -> list[str]:
    """The row's key stats as its path records them: a refine row's turns, mistakes and corrections;
    a task row's (coa, import) answer, check, tool calls, plans and reflections."""
    if row.get("source") in ("coa", "import"):
        check = {True: "correct", False: "wrong"}.get(row.get("correct"), "not checked")
        return [
            f"task {row.get('task_id')}  answer {row.get('final_answer')!r}  {check}",
            f"tool calls {stats.get('tool_calls_by_type', {})} ({stats.get('tool_failures', 0)} failed), "
            f"plans {stats.get('plans')}, re-plans {stats.get('replans')}, reflections {stats.get('reflections')}, "
            f"double checks {stats.get('double_check_scores')}",
        ]  # fmt: skip
    return [f"turns {stats.get('turns')}, errors {stats.get('errors_by_type')}, corrections {stats.get('corrections')}"]


def format_trajectory(row: dict, color: bool = False) -> str:
    paint = (lambda code, text: f"{code}{text}{RESET}") if color else (lambda code, text: text)
    status = "verified" if row["verified"] else f"not verified ({row['reason']})"
    persona = f"  persona {row['persona_id']}" if row.get("persona_id") else ""
    calls = f"  llm calls: {row['llm_calls']}" if row["llm_calls"] is not None else ""  # an import made none here
    lines = [f"{row['trajectory_id']}{persona}  {status}{calls}"]
    if row["stats"]:
        stats = json.loads(row["stats"])
        lines += stats_lines(row, stats)
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
