"""Eval results: one JSON file per evaluation under the run folder, and a printed table.

Results go to `RUN_DIR/eval/<UTC timestamp>.json` rather than a store table, so
several evaluations of several checkpoints sit side by side without a schema
change; the JSON holds the settings, the held-out selection, the overall figures
and every episode's transcript.
"""

from __future__ import annotations

import json
from pathlib import Path

from factory.store import utcnow

from .loop import EvalResults

COLUMNS = ("environment", "success", "progress", "steps", "format", "param", "loc", "logic", "unknown", "loops",
           "revisits")  # fmt: skip


def write_results(results: EvalResults, run_dir: str | Path, extra: dict | None = None) -> Path:
    """Write the results as JSON; a second evaluation within the same second gets a suffix, never an overwrite."""
    folder = Path(run_dir) / "eval"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"{utcnow():%Y%m%dT%H%M%S}"
    path, n = folder / f"{stamp}.json", 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{n}.json"
    payload = {"created_at": utcnow().isoformat(timespec="seconds"), **(extra or {}), **results.to_dict()}
    path.write_text(json.dumps(payload, indent=1, default=str), encoding="utf-8")
    return path


def _row(name: str, success: str, progress: float, steps: float, fmt: int, by_type: dict, loops: int, revisits: int):
    return [name, success, f"{progress:.2f}", f"{steps:g}", str(fmt), str(by_type.get("parameter", 0)),
            str(by_type.get("location", 0)), str(by_type.get("logic", 0)), str(by_type.get("unknown_action", 0)),
            str(loops), str(revisits)]  # fmt: skip


def format_results(results: EvalResults) -> str:
    """A fixed-width table: one line per environment, then the overall line."""
    rows = [list(COLUMNS)]
    for e in results.episodes:
        mark = "yes" if e.success else ("ERR" if e.status == "player_error" else "no")
        rows.append(_row(e.env_id, mark, e.progress, e.steps, e.format_errors, e.invalid_by_type, e.loops, e.revisits))
    o = results.overall
    rows.append(_row("overall", f"{o['success_rate']:.2f}", o["progress_rate"], round(o["mean_steps"], 1),
                     o["format_errors"], o["invalid_by_type"], o["loops"], o["revisits"]))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    aligned = [[r[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(r[1:], widths[1:]))] for r in rows]
    lines = ["  ".join(r) for r in aligned]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    summary = (
        f"player {results.player}: success {o['success_rate']:.2f}, progress {o['progress_rate']:.2f}, "
        f"format errors {o['format_errors']}/{o['steps']} steps, loops in {o['loop_rate']:.0%} of environments, "
        f"player errors {o['player_errors']}"
    )
    excluded = results.selection.get("excluded") or []
    note = f"held out: {len(results.episodes)} environment(s); excluded {len(excluded)}"
    return "\n".join([*lines, summary, note])
