"""Quality figures that look inside each refine row (issue 26): defects a cross-row count cannot see.

`quality.py` compares rows with each other; a row that repeats its own mistake, or a DM that answers
every move with one sentence pattern, passes those figures untouched. `row_quality(store)` reads the
verified refine rows (their turns, stored steps and scripts), all in SQL:

- repeats inside one row: an assistant turn whose action (name and arguments, as the `Action:` line
  writes it) an earlier turn of the row already made (`moves`; a retry after a fix counts, so this is
  context); a mistaken turn repeating an earlier mistaken turn's action with the same error type (the
  same refused move for the same reason: `mistakes`); an injected step (stored steps, `injected`)
  repeating an earlier injected step's action (`injected`); a thought (lower-cased, spaces collapsed)
  an earlier turn of the row already wrote (`thoughts`).
- observation templates: every DM line after the opening prompt as a skeleton (lower-cased; calls
  such as `take(item=x)`, quoted text, the script's own names in either form, other snake_case words
  and numbers masked), the most frequent skeletons with their share of observations and of rows,
  and the share of observations whose skeleton appears in two rows or more.
- mistake kinds: the error types of the mistaken turns and their shares, how many types hold more
  than 10%, and, from the stored steps, which mistakes were injected (by kind) and which the LLM made.
- arcs: per row its first mistake's assistant turn and the sequence of its error types
  (`@2 location > logic`); distinct arcs over rows and the most common arc; the same for the type
  sequence alone.

- grounded thoughts: the state assertions of the trained thoughts that neither what the player read nor
  the script's world replayed to that turn supports (refine/grounded_thoughts.py, recorded in each row's
  stats when it is written): their share of assertions, the trained thoughts and rows holding one, and
  the first examples. Rows written before the check existed are counted as unchecked.
"""

from __future__ import annotations

from typing import Any

from ..store import Store
from .quality_dm import dm_lines, format_dm_figures, slip_kinds

TOP = 5  # skeletons and arcs listed
KIND_FLOOR = 0.10  # a mistake kind "counts" above this share (issue 26's done-when: 4 kinds above 10%)

ROWS_SQL = r"""
WITH rows AS (
    SELECT trajectory_id, script_id, steps, coalesce(try(from_json(turns,
        '[{"role": "VARCHAR", "content": "VARCHAR", "error": {"type": "VARCHAR"}}]')), []) AS t
    FROM trajectories WHERE source = 'refine' AND verified AND turns IS NOT NULL),
moves AS (
    SELECT trajectory_id, pos, x.error.type AS error_type,
           regexp_replace(trim(split_part(x.content, 'Action:', 2)), '\s+', ' ', 'g') AS action,
           regexp_replace(lower(trim(regexp_replace(split_part(x.content, 'Action:', 1), '^\s*Thought:', ''))),
                          '\s+', ' ', 'g') AS thought
    FROM (SELECT trajectory_id, unnest(range(1, len(a) + 1)) AS pos, unnest(a) AS x
          FROM (SELECT trajectory_id, [x FOR x IN t IF x.role = 'assistant'] AS a FROM rows))),
steps AS (
    SELECT trajectory_id, unnest(range(1, len(s) + 1)) AS pos, unnest(s) AS x
    FROM (SELECT trajectory_id, try(from_json(steps, '[{"action": {"name": "VARCHAR", "params": "JSON"},
                 "evaluation": {"error": "VARCHAR"}, "injected": "VARCHAR"}]')) AS s FROM rows))
"""

REPEATS_SQL = r"""
, seen AS (
    SELECT 'moves' AS what, trajectory_id,
           row_number() OVER (PARTITION BY trajectory_id, action ORDER BY pos) > 1 AS again
    FROM moves WHERE action <> ''
    UNION ALL
    SELECT 'mistakes', trajectory_id, row_number() OVER (PARTITION BY trajectory_id, action, error_type ORDER BY pos) > 1
    FROM moves WHERE error_type IS NOT NULL AND action <> ''
    UNION ALL
    SELECT 'thoughts', trajectory_id, row_number() OVER (PARTITION BY trajectory_id, thought ORDER BY pos) > 1
    FROM moves WHERE thought <> ''
    UNION ALL
    SELECT 'injected', trajectory_id, row_number() OVER (
        PARTITION BY trajectory_id, x.action.name, x.action.params::VARCHAR ORDER BY pos) > 1
    FROM steps WHERE x.injected IS NOT NULL)
SELECT what, count(*), count(*) FILTER (again), count(DISTINCT trajectory_id) FILTER (again),
       count(DISTINCT trajectory_id) FROM seen GROUP BY what
"""

# The names a script gives (places, items, facts, actions, parameters and their values), as one
# case-insensitive alternation, longest first, in both forms (`med_bay`, `med bay`).
SCRIPT_SHAPE = (
    '{"environment": {"locations": [{"name": "VARCHAR", "items": ["VARCHAR"]}], "player": {"inventory": ["VARCHAR"]}, '
    '"facts": [{"name": "VARCHAR"}]}, "actions": [{"name": "VARCHAR", "parameters": [{"name": "VARCHAR", '
    '"valid_values": ["VARCHAR"]}]}]}'
)
OBSERVATIONS_SQL = rf"""
, script_names AS (
    SELECT script_id, unnest(flatten([
        [l.name FOR l IN j.environment.locations], flatten([l.items FOR l IN j.environment.locations]),
        j.environment.player.inventory, [f.name FOR f IN j.environment.facts], [a.name FOR a IN j.actions],
        flatten([[p.name FOR p IN a.parameters] FOR a IN j.actions]),
        flatten([flatten([p.valid_values FOR p IN a.parameters]) FOR a IN j.actions])])) AS name
    FROM (SELECT script_id, try(from_json(script, '{SCRIPT_SHAPE}')) AS j FROM scripts
          WHERE script_id IN (SELECT script_id FROM rows))),
forms AS (
    SELECT DISTINCT script_id, lower(form) AS form
    FROM (SELECT script_id, unnest([name, replace(name, '_', ' ')]) AS form FROM script_names)
    WHERE length(form) >= 3 AND NOT regexp_matches(form, '^[0-9. ]+$')),
patterns AS (
    SELECT script_id, '\b(' || string_agg(regexp_replace(form, '([.*+?^$()\[\]{{}}|\\])', '\\\1', 'g'), '|'
                                          ORDER BY length(form) DESC, form) || ')\b' AS pattern
    FROM forms GROUP BY script_id),
observed AS (
    SELECT r.trajectory_id, p.pattern,
           lower(trim(regexp_replace(unnest([x.content FOR x IN r.t[2:] IF x.role = 'user']), '^\s*Observation:', '')))
               AS text
    FROM rows r LEFT JOIN patterns p USING (script_id)),
masked AS (
    SELECT trajectory_id, trim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        CASE WHEN pattern IS NULL THEN quoted ELSE regexp_replace(quoted, pattern, '<name>', 'g') END,
        '\b[a-z0-9]+(_[a-z0-9]+)+\b', '<name>', 'g'), '\b\d+(\.\d+)?\b', '<n>', 'g'),
        '(<name>)( <name>)+', '<name>', 'g'), '\s+', ' ', 'g')) AS skeleton
    FROM (SELECT trajectory_id, pattern,
                 regexp_replace(regexp_replace(text, '[a-z_][a-z0-9_]*\([^()]*\)', '<call>', 'g'),
                                '"[^"]*"', '"<q>"', 'g') AS quoted
          FROM observed)),
skeletons AS (
    SELECT skeleton, count(*) AS n, count(DISTINCT trajectory_id) AS n_rows FROM masked GROUP BY skeleton)
"""

ARCS_SQL = r"""
, arcs AS (
    SELECT r.trajectory_id,
           coalesce('@' || min(m.pos) || ' ' || string_agg(m.error_type, ' > ' ORDER BY m.pos), 'no mistake') AS arc,
           coalesce(string_agg(m.error_type, ' > ' ORDER BY m.pos), 'no mistake') AS types
    FROM rows r LEFT JOIN moves m ON m.trajectory_id = r.trajectory_id AND m.error_type IS NOT NULL
    GROUP BY r.trajectory_id)
"""


def row_quality(store: Store) -> dict[str, Any]:
    """The within-row figures of the store's verified refine trajectories."""
    rows = store.query(ROWS_SQL + "SELECT count(*) FROM rows")[0][0]
    return {
        "rows": rows,
        "repeats": _repeats(store),
        "observations": _observations(store),
        "mistake_kinds": _mistake_kinds(store),
        "arcs": _arcs(store, rows),
        "grounding": _grounding(store),
        "slip_kinds": slip_kinds(store),
        "dm_lines": dm_lines(store),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _repeats(store: Store) -> dict[str, dict[str, Any]]:
    out = {
        what: {"turns": 0, "repeated": 0, "share": None, "rows_with_repeat": 0, "rows": 0}
        for what in ("moves", "mistakes", "injected", "thoughts")
    }
    for what, turns, repeated, rows_with, rows in store.query(ROWS_SQL + REPEATS_SQL):
        out[what] = {"turns": turns, "repeated": repeated, "share": _share(repeated, turns),
                     "rows_with_repeat": rows_with, "rows": rows}  # fmt: skip
    return out


def _observations(store: Store) -> dict[str, Any]:
    head = ROWS_SQL + OBSERVATIONS_SQL
    ((total, rows, distinct, shared),) = store.query(
        head + "SELECT (SELECT count(*) FROM masked), (SELECT count(DISTINCT trajectory_id) FROM masked), "
        "(SELECT count(*) FROM skeletons), (SELECT coalesce(sum(n), 0) FROM skeletons WHERE n_rows > 1)"
    )
    top = store.query(head + f"SELECT skeleton, n, n_rows FROM skeletons ORDER BY n DESC, n_rows DESC, 1 LIMIT {TOP}")
    return {
        "observations": total, "rows": rows, "distinct_skeletons": distinct,
        "in_shared_skeleton": int(shared), "share_in_shared_skeleton": _share(int(shared), total),
        "top": [{"skeleton": s, "observations": n, "share": _share(n, total), "rows": r, "share_rows": _share(r, rows)}
                for s, n, r in top],
    }  # fmt: skip


def _mistake_kinds(store: Store) -> dict[str, Any]:
    types = store.query(
        ROWS_SQL + "SELECT error_type, count(*) FROM moves WHERE error_type IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    origin = store.query(
        ROWS_SQL + "SELECT coalesce(x.injected, 'llm') AS origin, count(*) FROM steps "
        "WHERE x.evaluation.error <> 'none' GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    total = sum(n for _, n in types)
    injected = {kind: n for kind, n in origin if kind != "llm"}
    made = sum(injected.values())
    return {
        "mistakes": total,
        "error_types": {t: {"n": n, "share": _share(n, total)} for t, n in types},
        "types_above_floor": sum(1 for _, n in types if n > KIND_FLOOR * total),
        "floor": KIND_FLOOR,
        "llm_made": dict(origin).get("llm", 0),
        "injected": {k: {"n": n, "share": _share(n, made)} for k, n in injected.items()},
    }


def _arcs(store: Store, rows: int) -> dict[str, Any]:
    out = {}
    for key in ("arc", "types"):
        counted = store.query(
            ROWS_SQL + ARCS_SQL + f"SELECT {key}, count(*) FROM arcs GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {TOP}"
        )
        (distinct,) = store.query(ROWS_SQL + ARCS_SQL + f"SELECT count(DISTINCT {key}) FROM arcs")[0]
        out[key] = {
            "distinct": distinct,
            "share_distinct": _share(distinct, rows),
            "top": [{"arc": a, "rows": n, "share": _share(n, rows)} for a, n in counted],
        }
    return {"rows": rows, "by_position_and_types": out["arc"], "by_types": out["types"]}


GROUNDING_SQL = """
WITH rows AS (
    SELECT trajectory_id, CAST(stats AS JSON) AS s,
           len([x FOR x IN coalesce(try(from_json(turns, '[{"role": "VARCHAR", "loss": "BOOLEAN"}]')), [])
                IF x.role = 'assistant' AND x.loss]) AS trained
    FROM trajectories WHERE source = 'refine' AND verified AND turns IS NOT NULL AND json_valid(stats)),
checked AS (
    SELECT trajectory_id, trained, s->>'ungrounded_thought' AS example,
           CAST(s->>'state_assertions' AS BIGINT) AS assertions, CAST(s->>'ungrounded_assertions' AS BIGINT) AS bad,
           CAST(s->>'ungrounded_thoughts' AS BIGINT) AS thoughts
    FROM rows WHERE s->>'ungrounded_thoughts' IS NOT NULL)
"""


def _grounding(store: Store) -> dict[str, Any]:
    (rows,) = store.query(GROUNDING_SQL + "SELECT count(*) FROM rows")[0]
    checked, trained, assertions, bad, thoughts, rows_with = store.query(
        GROUNDING_SQL + "SELECT count(*), coalesce(sum(trained), 0), coalesce(sum(assertions), 0), "
        "coalesce(sum(bad), 0), coalesce(sum(thoughts), 0), count(*) FILTER (thoughts > 0) FROM checked"
    )[0]
    examples = store.query(
        GROUNDING_SQL + f"SELECT trajectory_id, example FROM checked WHERE thoughts > 0 ORDER BY 1 LIMIT {TOP}"
    )
    return {
        "rows": rows, "checked_rows": checked, "unchecked_rows": rows - checked, "trained_thoughts": int(trained),
        "state_assertions": int(assertions), "ungrounded_assertions": int(bad),
        "ungrounded_assertion_rate": _share(int(bad), int(assertions)), "ungrounded_thoughts": int(thoughts),
        "ungrounded_thought_share": _share(int(thoughts), int(trained)), "rows_with_ungrounded": rows_with,
        "examples": [{"trajectory_id": t, "example": e} for t, e in examples],
    }  # fmt: skip


# --- the text summary ----------------------------------------------------------------------------------------


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{share:.1%}"


def _repeat_text(label: str, r: dict[str, Any]) -> str:
    return f"{label} {r['repeated']}/{r['turns']} ({_pct(r['share'])}) in {r['rows_with_repeat']}/{r['rows']} rows"


def format_row_quality(q: dict[str, Any]) -> str:
    """The within-row figures as a few lines, after `format_quality`'s."""
    if not q["rows"]:
        return ""
    rep, obs, kinds, arcs = q["repeats"], q["observations"], q["mistake_kinds"], q["arcs"]
    top = obs["top"][0] if obs["top"] else None
    skeleton = (
        f'; top skeleton "{top["skeleton"][:80]}" {top["observations"]} ({_pct(top["share"])}, {top["rows"]} rows)'
        if top
        else ""
    )
    types = ", ".join(f"{t} {v['n']} ({_pct(v['share'])})" for t, v in kinds["error_types"].items()) or "none"
    injected = ", ".join(f"{k} {v['n']}" for k, v in kinds["injected"].items()) or "none"
    arc, by_types = arcs["by_position_and_types"], arcs["by_types"]
    top_arc = f'; most common "{arc["top"][0]["arc"]}" {arc["top"][0]["rows"]} rows ({_pct(arc["top"][0]["share"])})'
    return "\n".join([
        "  within a row (repeats of the row's own earlier turns): " + "; ".join([
            _repeat_text("same move", rep["moves"]), _repeat_text("same mistake", rep["mistakes"]),
            _repeat_text("same injected move", rep["injected"]), _repeat_text("same thought", rep["thoughts"])]),
        f"  observation skeletons (names, calls, numbers masked): {obs['distinct_skeletons']} distinct of "
        f"{obs['observations']}; in a skeleton shared by 2+ rows: {obs['in_shared_skeleton']} "
        f"({_pct(obs['share_in_shared_skeleton'])}){skeleton}",
        f"  mistake kinds: {types}; {kinds['types_above_floor']} above {kinds['floor']:.0%}; "
        f"LLM-made {kinds['llm_made']}, injected: {injected}",
        f"  arcs (first mistake @turn, error types): {arc['distinct']}/{arcs['rows']} distinct "
        f"({_pct(arc['share_distinct'])}){top_arc if arc['top'] else ''}; type sequences "
        f"{by_types['distinct']}/{arcs['rows']} distinct",
        _grounding_text(q["grounding"]),
        format_dm_figures(q["slip_kinds"], q["dm_lines"]),
    ])  # fmt: skip


def _grounding_text(g: dict[str, Any]) -> str:
    example = f"; first: {g['examples'][0]['example'][:120]}" if g["examples"] else ""
    unchecked = f" ({g['unchecked_rows']} rows unchecked)" if g["unchecked_rows"] else ""
    return (
        f"  grounded thoughts: {g['ungrounded_assertions']}/{g['state_assertions']} state assertions ungrounded "
        f"({_pct(g['ungrounded_assertion_rate'])}); {g['ungrounded_thoughts']}/{g['trained_thoughts']} trained "
        f"thoughts, {g['rows_with_ungrounded']}/{g['checked_rows']} rows{unchecked}{example}"
    )
