"""Figures on the mistakes' kinds and the DM's lines (issue 26), from the stored steps of verified rows.

- slip kinds (refine/slips.py): every mistake of the rows by kind, injected and LLM-made apart, and how
  many kinds hold more than 10% of them (a dataset whose mistakes are one shape teaches one correction).
- the DM's lines on injected steps: how many are one of the world's own refusal sentences (narration.py,
  prose.py) rather than the LLM's words; the continuation call writes them, so this should be 0.
- fact ids in observations: DM lines that name a script's fact as its id (`vitals_checked`) or as the
  quoted words the old narration used (`needs "vitals checked"`): machine text a player never reads.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..store import Store
from .narration import words
from .prose import WORDS as PROSE_WORDS

KIND_FLOOR = 0.10
EXAMPLES = 3

STEPS_SQL = """
WITH rows AS (
    SELECT trajectory_id, script_id, steps FROM trajectories
    WHERE source = 'refine' AND verified AND steps IS NOT NULL),
steps AS (
    SELECT trajectory_id, script_id, unnest(try(from_json(steps,
        '[{"observation": "VARCHAR", "evaluation": {"error": "VARCHAR"}, "injected": "VARCHAR", "slip": "VARCHAR"}]')))
        AS x FROM rows)
"""

FACTS_SQL = """
, facts AS (
    SELECT script_id, unnest(try(from_json(script, '{"environment": {"facts": [{"name": "VARCHAR"}]}}'))
                             .environment.facts).name AS fact
    FROM scripts WHERE script_id IN (SELECT script_id FROM rows)),
named AS (
    SELECT s.trajectory_id, s.x.observation AS observation
    FROM steps s JOIN facts f ON f.script_id = s.script_id
    WHERE contains(lower(s.x.observation), lower(f.fact))
       OR contains(lower(s.x.observation), '"' || lower(replace(f.fact, '_', ' ')) || '"'))
"""


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def slip_kinds(store: Store) -> dict[str, Any]:
    """The rows' mistakes by slip kind; `unlabelled`: mistakes stored before steps carried their kind."""
    found = store.query(
        STEPS_SQL + "SELECT coalesce(x.slip, 'unlabelled'), count(*), count(*) FILTER (x.injected IS NOT NULL) "
        "FROM steps WHERE x.evaluation.error <> 'none' GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    total = sum(n for _, n, _ in found)
    kinds = {k: {"n": n, "share": _share(n, total), "injected": inj, "llm_made": n - inj} for k, n, inj in found}
    return {
        "mistakes": total,
        "kinds": kinds,
        "kinds_above_floor": sum(1 for k, v in kinds.items() if k != "unlabelled" and v["n"] > KIND_FLOOR * total),
        "floor": KIND_FLOOR,
    }


@lru_cache(maxsize=1)
def world_refusals() -> re.Pattern:
    """Every refusal sentence the world can say, its blanks as wildcards: a DM line that is one of them."""
    templates = [t for options in words()["refusals"].values() for t in options]
    templates += [
        t for key in ("fact_missing", "fact_present", "fact_missing_act", "fact_unknown") for t in PROSE_WORDS[key]
    ]
    alternatives = [re.sub(r"\\\{\w+\\\}", ".+?", re.escape(t.strip())) for t in templates]
    return re.compile("^(?:" + "|".join(alternatives) + ")$", re.IGNORECASE)


def dm_lines(store: Store) -> dict[str, Any]:
    """Injected steps whose DM line is a world refusal sentence; observations naming a fact by its id."""
    injected = store.query(STEPS_SQL + "SELECT trajectory_id, x.observation FROM steps WHERE x.injected IS NOT NULL")
    templated = [(t, o) for t, o in injected if world_refusals().match((o or "").strip())]
    (observations,) = store.query(STEPS_SQL + "SELECT count(*) FROM steps")[0]
    (named,) = store.query(STEPS_SQL + FACTS_SQL + "SELECT count(DISTINCT (trajectory_id, observation)) FROM named")[0]
    examples = store.query(
        STEPS_SQL + FACTS_SQL + f"SELECT DISTINCT trajectory_id, observation FROM named ORDER BY 1, 2 LIMIT {EXAMPLES}"
    )
    return {
        "injected_steps": len(injected),
        "template_lines_on_injected": len(templated),
        "template_examples": [{"trajectory_id": t, "line": o} for t, o in templated[:EXAMPLES]],
        "observations": observations,
        "with_fact_ids": named,
        "fact_id_examples": [{"trajectory_id": t, "line": o} for t, o in examples],
    }


def format_dm_figures(kinds: dict[str, Any], lines: dict[str, Any]) -> str:
    shown = ", ".join(f"{k} {v['n']} ({v['share']:.0%}; {v['injected']} injected)" for k, v in kinds["kinds"].items())
    return (
        f"  slip kinds: {shown or 'none'}; {kinds['kinds_above_floor']} above {kinds['floor']:.0%}\n"
        f"  DM lines: {lines['template_lines_on_injected']}/{lines['injected_steps']} injected steps answered with a "
        f"world template; {lines['with_fact_ids']}/{lines['observations']} observations name a fact id"
    )
