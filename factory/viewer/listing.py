"""`factory ls RUN`: a run's rows, one line each, with their key stats and why they failed or were dropped.

Rows are the trajectories of every path (refine, coa, import) and, under --failed, the
refine scripts that failed verification (their problems live only in `scripts.problems`).
"Kept" is the export's own notion: the row is in `selection_sql` (export/selection.py),
so `ls --kept` lists exactly what `factory export` would write.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from ..errors import FactoryError
from ..export.options import ExportOptions
from ..export.selection import open_store, selection_sql
from ..store import Store
from ..store.errors import first_line

SHOWN = ("all", "failed", "kept", "dropped")


@dataclass(frozen=True)
class Listed:
    id: str
    source: str  # refine | coa | import | script (a refine script that failed verification)
    verified: bool
    kept: bool  # the export would write it
    dropped: bool  # verified, but a filter dropped it
    correct: bool | None  # the answer check (coa, import); None: not checked
    turns: int | None
    tools: int | None  # tool calls (coa, import) or actions taken (refine: the player's turns)
    fixes: int | None  # corrected mistakes (refine) or reflections (coa, import)
    reason: str  # why it failed or was dropped; empty for a kept row


def trajectory_sql(where: str | None) -> str:
    """One row per trajectory with its stats, export verdict and raw reasons (`where`: over trajectories' columns)."""
    exported = f"SELECT DISTINCT trajectory_id FROM ({selection_sql(ExportOptions())})"
    return f"""
        WITH last_script AS (
            SELECT persona_id, arg_max(problems, attempt) AS problems, count(*) AS attempts
            FROM scripts WHERE NOT coalesce(verified, false) GROUP BY persona_id),
        last_verdict AS (  -- a refine row's failed verifier checks, for rows whose own reason is missing
            SELECT trajectory_id, arg_max(concat_ws(': ', rule, reason), attempt) AS verdict
            FROM verdicts WHERE NOT coalesce(ok, false) GROUP BY trajectory_id)
        SELECT t.trajectory_id, t.source, coalesce(t.verified, false), e.trajectory_id IS NOT NULL,
               coalesce(NOT c.keep, false), t.correct, t.n_turns,
               TRY_CAST(json_extract(t.stats, CASE WHEN t.source = 'refine' THEN '$.assistant_turns'
                                                   ELSE '$.tool_calls' END) AS INTEGER),
               CASE WHEN t.source = 'refine' THEN t.n_corrections
                    ELSE TRY_CAST(json_extract(t.stats, '$.reflections') AS INTEGER) END,
               t.rule, coalesce(t.reason, v.verdict), c.dropped_by, c.drop_reasons, s.problems, s.attempts
        FROM (SELECT * REPLACE (CASE WHEN json_valid(stats) THEN stats END AS stats)
              FROM trajectories WHERE {where or "true"}) t  -- a damaged stats text shows as no stats
        LEFT JOIN curation c USING (trajectory_id)
        LEFT JOIN ({exported}) e USING (trajectory_id)
        LEFT JOIN last_verdict v USING (trajectory_id)
        LEFT JOIN last_script s ON t.source = 'refine' AND t.script_id IS NULL AND s.persona_id = t.persona_id
        ORDER BY t.trajectory_id"""


FAILED_SCRIPTS_SQL = """
    SELECT script_id, problems FROM scripts WHERE NOT coalesce(verified, false) ORDER BY script_id"""


def load_rows(run_dir: str | Path, where: str | None = None, with_scripts: bool = False) -> list[Listed]:
    with _read_only(run_dir) as store:
        try:
            found = [_trajectory(row) for row in store.query(trajectory_sql(where))]
        except duckdb.Error as exc:
            if where is None:
                raise
            raise FactoryError(
                f"--where {where!r} is not a usable predicate over trajectories: {first_line(exc)}"
            ) from None
        if with_scripts and where is None:  # a script row has no trajectory columns for a predicate to test
            found += [_script(*row) for row in store.query(FAILED_SCRIPTS_SQL)]
    return sorted(found, key=lambda row: row.id)


def _read_only(run_dir: str | Path) -> Store:
    store = open_store(run_dir)  # brings an older store's migrations (the curation view) up to date
    if store.read_only:
        return store
    store.close()
    return Store.open(run_dir, read_only=True)  # a --where predicate never runs on a writable connection


def _trajectory(row: tuple) -> Listed:
    (trajectory_id, source, verified, kept, dropped, correct, turns, tools, fixes, rule, reason, dropped_by,
     drop_reasons, problems, attempts) = row  # fmt: skip
    return Listed(trajectory_id, source, verified, kept, dropped, correct, turns, tools, fixes,
                  _why(verified, dropped, rule, reason, dropped_by, drop_reasons, problems, attempts))  # fmt: skip


def _why(verified, dropped, rule, reason, dropped_by, drop_reasons, problems, attempts) -> str:
    if dropped:
        reasons = "; ".join(r for r in drop_reasons or [] if r)
        return f"dropped by {', '.join(dropped_by or [])}" + (f": {reasons}" if reasons else "")
    if verified:
        return ""
    if attempts:  # a refine row without a verified script: say what its last script got wrong
        tries = f" ({attempts} tries)" if attempts and attempts > 1 else ""
        return f"{reason or 'no verified script'}{tries}: {_first_problem(problems)}"
    if rule and rule not in (reason or ""):  # "grammar tag_order: ..." names its rule already
        return f"{rule}: {reason}" if reason else rule
    return reason or rule or "not verified (no reason recorded)"


def _script(script_id: str, problems: str | None) -> Listed:
    return Listed(script_id, "script", False, False, False, None, None, None, None, _first_problem(problems))


def _first_problem(problems: str | None) -> str:
    try:
        found = [str(p) for p in json.loads(problems or "[]")]
    except json.JSONDecodeError:  # stored as plain text by some older writer: show it as it is
        found = [problems or ""]
    if not found:
        return "script not verified (no problem recorded)"
    return found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else "")


def select(rows: list[Listed], shown: str = "all") -> list[Listed]:
    """The rows `--failed` / `--kept` / `--dropped` ask for (all: the trajectories, no script rows)."""
    if shown == "failed":
        rows = [row for row in rows if not row.verified]
    elif shown == "kept":
        rows = [row for row in rows if row.kept]
    elif shown == "dropped":
        rows = [row for row in rows if row.dropped]
    elif shown == "all":
        rows = [row for row in rows if row.source != "script"]
    return rows


def sample(rows: list[Listed], n: int | None, seed: int = 0) -> list[Listed]:
    """`--sample N`: N of the rows, the same N for the same seed, in id order."""
    if n is None or n >= len(rows):
        return rows
    return sorted(random.Random(seed).sample(rows, n), key=lambda row: row.id)


def as_json(row: Listed) -> str:
    return json.dumps(asdict(row), ensure_ascii=False)
