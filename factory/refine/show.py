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
            raise FactoryError(
                f"no trajectory '{trajectory_id}' in {run_dir} (use a trajectory id or a persona id; "
                f"factory ls {run_dir} lists them)"
            )
        row = dict(zip(ROW_KEYS, rows[0]))
        row["why"] = why_lines(store, row)
    return row


ROW_KEYS = ("trajectory_id", "persona_id", "verified", "reason", "conversations", "stats", "llm_calls", "source",
            "task_id", "final_answer", "correct", "rule", "script_id")  # fmt: skip


def why_lines(store: Store, row: dict) -> list[str]:
    """Where the row's failure or drop is recorded beyond its own reason: a refine row without a verified
    script lists each script attempt's problems (scripts.problems); a filtered row its filters' verdicts."""
    lines = []
    if row["source"] == "refine" and not row["verified"] and row["script_id"] is None:
        for script_id, problems in store.query(
            "SELECT script_id, problems FROM scripts WHERE persona_id = ? AND NOT coalesce(verified, false) "
            "ORDER BY attempt",
            [row["persona_id"]],
        ):
            lines.append(f"script {script_id} failed: {'; '.join(_problems(problems)) or 'no problem recorded'}")
    if store.has_table("filter_verdicts"):
        for name, keep, reason in store.query(
            "SELECT filter, keep, reason FROM filter_verdicts WHERE trajectory_id = ? ORDER BY filter",
            [row["trajectory_id"]],
        ):
            lines.append(f"filter {name}: {'kept' if keep else 'dropped'}" + (f" ({reason})" if reason else ""))
    return lines


def _problems(text: str | None) -> list[str]:
    try:
        return [str(problem) for problem in json.loads(text or "[]")]
    except json.JSONDecodeError:
        return [text or ""]


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
        ]
    return [f"turns {stats.get('turns')}, errors {stats.get('errors_by_type')}, corrections {stats.get('corrections')}"]


def format_trajectory(row: dict, color: bool = False) -> str:
    paint = (lambda code, text: f"{code}{text}{RESET}") if color else (lambda code, text: text)
    status = "verified" if row["verified"] else f"not verified ({failure(row)})"
    persona = f"  persona {row['persona_id']}" if row.get("persona_id") else ""
    calls = f"  llm calls: {row['llm_calls']}" if row["llm_calls"] is not None else ""  # an import made none here
    lines = [f"{row['trajectory_id']}{persona}  {status}{calls}", *row.get("why", [])]
    stats = _stats(row["stats"])
    if stats:
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


def failure(row: dict) -> str:
    """The rule a failed row broke (a coa run status or grammar rule) and its reason, each once."""
    rule, reason = row.get("rule"), row.get("reason")
    if rule and reason and rule not in reason:
        return f"{rule}: {reason}"
    return reason or rule or "no reason recorded"


def _stats(text: str | None) -> dict:
    try:
        stats = json.loads(text or "{}")
    except json.JSONDecodeError:  # a damaged stats text: show the turns without them
        return {}
    return stats if isinstance(stats, dict) else {}
