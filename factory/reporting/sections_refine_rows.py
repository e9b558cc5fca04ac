"""The within-row part of the report's refine quality: the figures of `refine.quality_rows`, as tiles and tables.

The same figures `factory quality` prints after the cross-row ones: a row's repeats of its own moves,
mistakes, injected moves and thoughts; the most frequent observation skeletons; the mistake kinds
(error types, injected kinds); and the arcs (first mistake position and error-type sequence) rows share.
"""

from __future__ import annotations

from typing import Any

from .page import as_int, as_pct, as_text, cards, empty, panel, subsection, table
from .svg import COLORS, bar_chart

INTRO = (
    "Inside each verified refine row. A repeat is a turn doing what an earlier turn of the same row did: the same "
    "action with the same arguments (a retry after a fix counts: context), the same refused action with the same "
    "error type, the same injected move, the same thought. An observation's skeleton is its text lower-cased with "
    "calls, quoted text, the script's names and numbers masked. An arc is a row's first-mistake turn and its error "
    "types in order. A thought is ungrounded when it asserts a state of the script's things (the player's place or "
    "inventory, an item's place, a thing's state) that neither what the player read nor the world replayed to that "
    "turn supports; plans and guesses assert nothing."
)
REPEAT_LABELS = {"moves": "same move (action and arguments)", "mistakes": "same refused move, same error",
                 "injected": "same injected move", "thoughts": "same thought"}  # fmt: skip
REPEATS = [
    ("repeat of", "label", as_text),
    ("turns", "turns", as_int),
    ("repeated", "repeated", as_int),
    ("share", "share", as_pct),
    ("rows with one", "rows_with_repeat", as_int),
    ("rows", "rows", as_int),
]
SKELETONS = [
    ("skeleton", "skeleton", as_text),
    ("observations", "observations", as_int),
    ("share", "share", as_pct),
    ("rows", "rows", as_int),
    ("of rows", "share_rows", as_pct),
]
KINDS = [
    ("origin", "origin", as_text),
    ("kind", "kind", as_text),
    ("mistakes", "n", as_int),
    ("share", "share", as_pct),
]
ARCS = [("arc", "arc", as_text), ("rows", "rows", as_int), ("share", "share", as_pct)]
UNGROUNDED = [("row", "trajectory_id", as_text), ("first ungrounded assertion", "example", as_text)]


def row_quality_parts(q: dict[str, Any]) -> list[str]:
    """A heading and intro, then the panels (nothing when there are no verified refine rows)."""
    if not q["rows"]:
        return []
    head = subsection("refine-rows", "Inside each refine row", INTRO)
    return [head, _tiles(q), _repeats(q["repeats"]), _skeletons(q["observations"]), _kinds(q["mistake_kinds"], q["slip_kinds"]),
            _arcs(q["arcs"]), _grounding(q["grounding"])]  # fmt: skip


def _tiles(q: dict[str, Any]) -> str:
    rep, obs, kinds, arcs = q["repeats"], q["observations"], q["mistake_kinds"], q["arcs"]
    return cards([("repeated injected moves", as_int(rep["injected"]["repeated"])),
                  ("repeated thoughts", as_int(rep["thoughts"]["repeated"])),
                  ("observations in shared skeletons", as_pct(obs["share_in_shared_skeleton"])),
                  (f"slip kinds above {kinds['floor']:.0%}", as_int(q["slip_kinds"]["kinds_above_floor"])),
                  ("injected DM lines from a template", as_int(q["dm_lines"]["template_lines_on_injected"])),
                  ("observations naming a fact id", as_int(q["dm_lines"]["with_fact_ids"])),
                  ("distinct arcs / rows", as_pct(arcs["by_position_and_types"]["share_distinct"])),
                  ("ungrounded state assertions", as_pct(q["grounding"]["ungrounded_assertion_rate"]))])  # fmt: skip


def _repeats(repeats: dict[str, Any]) -> str:
    rows = [{"label": REPEAT_LABELS[what], **figures} for what, figures in repeats.items()]
    inner = table(REPEATS, rows, "refine-repeats", "Turns repeating an earlier turn of the same row")
    return f'<div class="panel"><h3>Repeats inside a row</h3>{inner}</div>'


def _skeletons(obs: dict[str, Any]) -> str:
    caption = (
        f"{obs['distinct_skeletons']} distinct skeletons over {obs['observations']} observations; "
        f"{as_pct(obs['share_in_shared_skeleton'])} of observations have a skeleton found in 2 rows or more"
    )
    chart = (
        bar_chart("refine-skeletons", [(t["skeleton"], t["share"]) for t in obs["top"]], fmt=as_pct, color=COLORS[4])
        if obs["top"]
        else empty("no observations")
    )
    return panel(
        "Most frequent observation skeletons", chart, table(SKELETONS, obs["top"], "refine-skeletons", caption)
    )


def _kinds(kinds: dict[str, Any], slips: dict[str, Any]) -> str:
    rows = [{"origin": "slip kind", "kind": k, **v} for k, v in slips["kinds"].items()]
    rows += [{"origin": "error type", "kind": t, **v} for t, v in kinds["error_types"].items()]
    chart = (
        bar_chart("refine-kinds", [(k, v["share"]) for k, v in slips["kinds"].items()], fmt=as_pct, color=COLORS[3])
        if slips["kinds"]
        else empty("no mistakes")
    )
    caption = (
        f"Slip kinds (refine/slips.py) and error types of {slips['mistakes']} mistakes; "
        f"{kinds['llm_made']} made by the LLM, the rest injected"
    )
    return panel("Mistake kinds", chart, table(KINDS, rows, "refine-kinds", caption))


def _arcs(arcs: dict[str, Any]) -> str:
    full, types = arcs["by_position_and_types"], arcs["by_types"]
    tables = table(
        ARCS, full["top"], "refine-arcs",
        f"First mistake @turn and error types: {full['distinct']} distinct of {arcs['rows']} rows",
    ) + table(ARCS, types["top"], "refine-arc-types",
              f"Error types alone: {types['distinct']} distinct of {arcs['rows']} rows")  # fmt: skip
    return f'<div class="panel"><h3>Arcs rows share</h3>{tables}</div>'


def _grounding(g: dict[str, Any]) -> str:
    caption = (
        f"{g['ungrounded_assertions']} of {g['state_assertions']} state assertions ungrounded "
        f"({as_pct(g['ungrounded_assertion_rate'])}); {g['ungrounded_thoughts']} of {g['trained_thoughts']} trained "
        f"thoughts, {g['rows_with_ungrounded']} of {g['checked_rows']} rows; {g['unchecked_rows']} rows unchecked"
    )
    inner = table(UNGROUNDED, g["examples"], "refine-ungrounded", caption)
    return f'<div class="panel"><h3>Grounded thoughts</h3>{inner}</div>'
