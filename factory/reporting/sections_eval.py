"""The report's Held-out evaluation section: every `factory eval` results file under RUN_DIR/eval/.

One row per results file and game: refine scripts are one game; a real environment
(`factory eval --env`) groups its episodes by name and level, seeds pooled, so a base
model and a tuned one evaluated on the same seeds sit on rows side by side.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .page import as_float, as_int, as_pct, as_text, empty, section, table

COLUMNS = (
    ("results file", "file", as_text),
    ("player", "player", as_text),
    ("environment", "game", as_text),
    ("episodes", "episodes", as_int),
    ("success", "success", as_pct),
    ("progress", "progress", as_float),
    ("format errors", "format_errors", as_int),
    ("steps", "steps", as_int),
)


def evaluations(run_dir: Path) -> list[dict[str, Any]]:
    """Rows from RUN_DIR/eval/*.json, oldest first; a file that does not parse is one row saying so."""
    rows = []
    for path in sorted((Path(run_dir) / "eval").glob("*.json")):
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            rows.extend(_rows(path.name, saved))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            rows.append({"file": path.name, "player": f"unreadable: {type(exc).__name__}", "game": None,
                         "episodes": None, "success": None, "progress": None, "format_errors": None, "steps": None})  # fmt: skip
    return rows


def _rows(name: str, saved: dict) -> list[dict[str, Any]]:
    groups: dict[str, list[dict]] = {}
    for episode in saved["environments"]:
        game = episode["env_id"].rsplit(":", 1)[0] if saved.get("kind") == "envs" else "refine scripts"
        groups.setdefault(game, []).append(episode)
    return [
        {"file": name, "player": saved.get("player"), "game": game, "episodes": len(episodes),
         "success": sum(e["success"] for e in episodes) / len(episodes),
         "progress": sum(e["progress"] for e in episodes) / len(episodes),
         "format_errors": sum(e["format_errors"] for e in episodes), "steps": sum(e["steps"] for e in episodes)}
        for game, episodes in groups.items()
    ]  # fmt: skip


def held_out(rows: list[dict[str, Any]]) -> str:
    intro = (
        "`factory eval` results in RUN_DIR/eval/: success rate, progress rate (AgentBoard's metrics; "
        "docs/eval.md defines progress per environment) and replies with no available action, per environment."
    )
    if not rows:
        return section("eval", "Held-out evaluation", intro, [empty("no evaluation yet: run factory eval RUN_DIR")])
    return section("eval", "Held-out evaluation", intro, [table(COLUMNS, rows, "eval")])
