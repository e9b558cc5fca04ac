"""Where environments come from: the verified scripts of a run store, or a file of scripts.

A scripts file is JSONL/JSON/parquet rows, each a script object or {script_id, script} (the form the
RL export writes beside its refine-world rows, OUT/verl/refine_world/scripts.jsonl, and `factory eval
--scripts` reads). A script the world cannot score is named with the reason (`playable`): no declared
goal, a goal no short plan reaches, or one that already holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from pydantic import ValidationError

from ..config import describe_validation_error
from ..errors import FactoryError
from ..refine.script import Script
from ..refine.solvable import MAX_DEPTH, shortest_plan
from ..rows import open_path
from ..store import Store


def store_scripts(store: Store) -> Iterable[tuple[str, Script | str]]:
    """(script_id, Script) per verified script; (script_id, problem) when its JSON no longer parses."""
    rows = store.query("SELECT script_id, script FROM scripts WHERE verified AND script IS NOT NULL ORDER BY 1")
    for script_id, body in rows:
        try:
            yield script_id, Script.model_validate_json(body)
        except ValidationError as exc:
            yield script_id, f"stored script does not parse: {describe_validation_error(exc, script_id)}"


def file_scripts(path: str | Path) -> Iterable[tuple[str, Script | str]]:
    """(script_id, Script) per row of a scripts file; (id, "not verified") for rows marked verified=false."""
    _, rows = open_path(Path(path), split="train")
    for where, row in rows:
        body = row.get("script", row)
        script_id = str(row.get("script_id") or where)
        if row.get("verified") is False:
            yield script_id, "marked not verified in the scripts file"
            continue
        try:
            yield script_id, Script.model_validate_json(body) if isinstance(body, str) else Script.model_validate(body)
        except ValidationError as exc:
            raise FactoryError(describe_validation_error(exc, where)) from None


def load_scripts(path: str | Path) -> dict[str, Script]:
    """A scripts file's usable scripts by id, for `RefineWorldEnv(scripts=...)`."""
    return {script_id: script for script_id, script in file_scripts(path) if isinstance(script, Script)}


def playable(script: Script) -> tuple[int | None, str]:
    """The shortest plan's length, or None and why the script cannot be scored."""
    if not script.goal.conditions:
        return None, "no declared goal: success cannot be judged"
    plan = shortest_plan(script)
    if plan is None:
        return None, f"no plan of at most {MAX_DEPTH} actions reaches the goal"
    if not plan:
        return None, "the goal already holds at the start"
    return len(plan), ""
