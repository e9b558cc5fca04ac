"""How a run's verified coa / import trajectories read as training data (issue 25, part 3).

`coa_quality(store)` reads only the store, all in SQL, over the verified rows of both AFM paths:

- openings: the most frequent openings (first 3 and 4 words, lower-cased) of the trained <think> and
  <reflection> blocks, each with the share of blocks of its kind it opens and the share of rows (with
  such a block) it opens one in. A copied example phrase shows as one opening on most blocks. The
  blocks and openings are the template filter's own (filters/template.py), so the figure and the
  filter that drops on it agree.
- answer_before_tool: rows whose final answer was written before the first observation (recalled,
  not found), of the rows whose stats record it (rows written before the field are not counted).
- tool_calls: a histogram of tool calls per trajectory and its median (stats, else the stored tool inputs).
- grounding: the share of answer-bearing claims an observation supports, and of rows with every claim
  supported, over the rows whose stats record claims.
- distiller_phrases: rows whose completion holds a phrase the distiller once inserted into thoughts;
  they are not the model's text, and the count must stay 0.

`run_coa_quality(run_dir)` is the same read from a run folder, through a read-only snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..filters.template import BLOCK_KINDS, block_words_sql, opening_sql
from ..store import Store

ROWS_SQL = "SELECT * FROM trajectories WHERE source IN ('coa', 'import') AND verified"
NGRAMS = (3, 4)  # words per opening
TOP = 5  # openings listed per kind and length
DISTILLER_PHRASES = ("Checking it:", "Revised plan:", "A first answer,", "did not hold up")
# The stats fields read, as one typed struct (try(): stats that are not valid JSON give NULL fields).
STATS_SHAPE = (
    '{"tool_calls": "BIGINT", "claims": "BIGINT", "grounded_claims": "BIGINT", "answer_before_tool": "BOOLEAN"}'
)
STATS_SQL = f"SELECT *, try(from_json(stats, '{STATS_SHAPE}')) AS s FROM ({ROWS_SQL})"

OPENINGS_SQL = f"""
WITH blocks AS MATERIALIZED (
    SELECT trajectory_id, kind, [{", ".join(opening_sql("words", n) for n in NGRAMS)}] AS openings
    FROM ({block_words_sql(ROWS_SQL)})),
totals AS (SELECT kind, count(*) AS blocks, count(DISTINCT trajectory_id) AS n_rows FROM blocks GROUP BY kind),
grams AS (
    SELECT kind, n, opening, count(*) AS blocks, count(DISTINCT trajectory_id) AS n_rows
    FROM (SELECT trajectory_id, kind, unnest({list(NGRAMS)}) AS n, unnest(openings) AS opening FROM blocks)
    GROUP BY kind, n, opening),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY kind, n ORDER BY blocks DESC, n_rows DESC, opening) AS rank FROM grams)
SELECT t.kind, t.blocks, t.n_rows, r.n, r.opening, r.blocks, r.n_rows
FROM totals t LEFT JOIN ranked r ON r.kind = t.kind AND r.rank <= {TOP}
ORDER BY t.kind, r.n, r.rank
"""


def coa_quality(store: Store) -> dict[str, Any]:
    """Every coa figure of the quality report for the store's verified coa / import trajectories."""
    return {
        "rows": store.query(f"SELECT count(*) FROM ({ROWS_SQL})")[0][0],
        "openings": _openings(store),
        "answer_before_tool": _answer_before_tool(store),
        "tool_calls": _tool_calls(store),
        "grounding": _grounding(store),
        "distiller_phrases": _distiller_phrases(store),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _openings(store: Store) -> dict[str, Any]:
    """Per kind: its blocks and rows, and per opening length the top openings with their shares."""
    out = {kind: {"blocks": 0, "rows": 0, **{f"top_{n}": [] for n in NGRAMS}} for kind in BLOCK_KINDS}
    for kind, blocks, rows, n, opening, opened, opened_rows in store.query(OPENINGS_SQL):
        out[kind].update(blocks=blocks, rows=rows)
        if opening is not None:
            out[kind][f"top_{n}"].append({"opening": opening, "blocks": opened, "share_blocks": _share(opened, blocks),
                                          "rows": opened_rows, "share_rows": _share(opened_rows, rows)})  # fmt: skip
    return out


def _answer_before_tool(store: Store) -> dict[str, Any]:
    known, recalled = store.query(
        f"SELECT count(s.answer_before_tool), count(*) FILTER (s.answer_before_tool) FROM ({STATS_SQL})"
    )[0]
    return {"rows_known": known, "recalled": recalled, "share": _share(recalled, known)}


def _tool_calls(store: Store) -> dict[str, Any]:
    """Calls per row: the stats' count, else the row's stored tool inputs (rows of older writers)."""
    rows = store.query(
        f"SELECT calls, count(*) FROM (SELECT coalesce(s.tool_calls, len(tool_inputs)) AS calls FROM ({STATS_SQL})) "
        "WHERE calls IS NOT NULL GROUP BY calls ORDER BY calls"
    )
    counts = dict(rows)
    histogram = {v: counts.get(v, 0) for v in range(rows[0][0], rows[-1][0] + 1)} if rows else {}
    values = sorted(v for v, n in rows for _ in range(n))
    middle = len(values) // 2
    median = None if not values else values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    return {"histogram": histogram, "median": median, "rows": len(values)}


def _grounding(store: Store) -> dict[str, Any]:
    known, claims, grounded, all_grounded = store.query(
        "SELECT count(*), coalesce(sum(s.claims), 0), coalesce(sum(s.grounded_claims), 0), "
        f"count(*) FILTER (s.grounded_claims >= s.claims) FROM ({STATS_SQL}) "
        "WHERE s.claims IS NOT NULL AND s.grounded_claims IS NOT NULL"
    )[0]
    return {"rows_known": known, "claims": claims, "grounded": grounded, "share": _share(grounded, claims),
            "rows_all_grounded": all_grounded, "share_rows_all_grounded": _share(all_grounded, known)}  # fmt: skip


def _distiller_phrases(store: Store) -> dict[str, Any]:
    found = ", ".join("count(*) FILTER (contains(completion, ?))" for _ in DISTILLER_PHRASES)
    any_found = " OR ".join("contains(completion, ?)" for _ in DISTILLER_PHRASES)
    counts = store.query(
        f"SELECT count(*) FILTER ({any_found}), {found} FROM ({ROWS_SQL})", [*DISTILLER_PHRASES, *DISTILLER_PHRASES]
    )[0]
    return {"rows": counts[0], "by_phrase": dict(zip(DISTILLER_PHRASES, counts[1:]))}


# --- the text summary ----------------------------------------------------------------------------------------


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{share:.1%}"


def _openings_line(kind: str, figures: dict[str, Any], n: int) -> str:
    blocks, rows = figures["blocks"], figures["rows"]
    top = "; ".join(
        f'"{o["opening"]}" {o["blocks"]}/{blocks} blocks ({_pct(o["share_blocks"])}), '
        f"{o['rows']}/{rows} rows ({_pct(o['share_rows'])})"
        for o in figures[f"top_{n}"]
    )
    return f"  {kind} openings, first {n} words: {top or 'none'}"


def format_coa_quality(q: dict[str, Any]) -> str:
    """The coa figures as a few lines for the terminal (`factory quality`)."""
    if not q["rows"]:
        return "coa quality: no verified coa/import trajectories"
    before, calls, grounding, phrases = q["answer_before_tool"], q["tool_calls"], q["grounding"], q["distiller_phrases"]
    histogram = ", ".join(f"{value}: {n}" for value, n in calls["histogram"].items()) or "none"
    found = ", ".join(f'"{p}" {n}' for p, n in phrases["by_phrase"].items() if n)
    lines = [f"coa quality ({q['rows']} verified coa/import trajectories read)"]
    lines += [_openings_line(kind, q["openings"][kind], n) for kind in BLOCK_KINDS for n in NGRAMS]
    lines += [
        f"  answer written before the first tool: {before['recalled']}/{before['rows_known']} rows "
        f"({_pct(before['share'])}; rows that do not record it: {q['rows'] - before['rows_known']})",
        f"  tool calls per trajectory (calls: rows): {histogram}; median {calls['median']}",
        f"  grounded claims: {grounding['grounded']}/{grounding['claims']} ({_pct(grounding['share'])}); rows with "
        f"every claim grounded: {grounding['rows_all_grounded']}/{grounding['rows_known']} "
        f"({_pct(grounding['share_rows_all_grounded'])}; rows that do not record claims: "
        f"{q['rows'] - grounding['rows_known']})",
        f"  distiller-inserted phrases (should be 0): {phrases['rows']} rows" + (f" ({found})" if found else ""),
    ]
    return "\n".join(lines)


def run_coa_quality(run_dir: str | Path) -> dict[str, Any]:
    """The coa quality figures of a run folder, read without writing to it (any schema version)."""
    with Store.open(run_dir, read_only=True) as store:
        return coa_quality(store)
