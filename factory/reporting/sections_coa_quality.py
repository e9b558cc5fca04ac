"""The coa / import part of the report's quality section: the figures of `coa_quality`, as tiles, charts and tables.

The same figures `factory quality` prints (reporting/coa_quality.py): template openings of trained
thoughts and reflections, answers recalled before any tool, tool calls per trajectory, grounded claims,
and phrases the distiller once inserted.
"""

from __future__ import annotations

from typing import Any

from .page import as_float, as_int, as_pct, as_text, cards, empty, panel, subsection, table
from .sql import Bin
from .svg import COLORS, bar_chart, histogram_chart

INTRO = (
    "Over verified coa and import trajectories. An opening is the first 3 or 4 words (lower-cased) of a trained "
    "`<think>` or `<reflection>` block, rating lines left out; its shares are of all blocks of that kind and of "
    "the rows with such a block. Answer-before-tool and grounding count the rows whose stats record them."
)
OPENINGS = [
    ("block", "kind", as_text),
    ("words", "n", as_int),
    ("opening", "opening", as_text),
    ("blocks", "blocks", as_int),
    ("of blocks", "share_blocks", as_pct),
    ("rows", "rows", as_int),
    ("of rows", "share_rows", as_pct),
]
BINS = [("tool calls", "value", as_text), ("trajectories", "n", as_int)]
GROUNDING = [
    ("rows recording claims", "rows_known", as_int),
    ("claims", "claims", as_int),
    ("grounded", "grounded", as_int),
    ("share", "share", as_pct),
    ("rows all grounded", "rows_all_grounded", as_int),
    ("share of rows", "share_rows_all_grounded", as_pct),
]
RECALLED = [
    ("rows recording it", "rows_known", as_int),
    ("answer before tool", "recalled", as_int),
    ("share", "share", as_pct),
]
PHRASES = [("distiller phrase", "phrase", as_text), ("rows", "n", as_int)]


def coa_quality_parts(q: dict[str, Any]) -> list[str]:
    """The coa part of the quality section: a heading and intro, then its panels (or a line saying there is none)."""
    head = subsection("coa-quality", "Chain-of-Agents (coa, import)", INTRO)
    if not q["rows"]:
        return [head, empty("no verified coa/import trajectories")]
    return [head, _tiles(q), _openings(q["openings"]), _tool_calls(q["tool_calls"]), _grounding(q)]


def _top_share(openings: dict[str, Any]) -> float | None:
    top = openings["top_3"]
    return top[0]["share_blocks"] if top else None


def _tiles(q: dict[str, Any]) -> str:
    return cards([("verified coa/import", as_int(q["rows"])),
                  ("top reflection opening", as_pct(_top_share(q["openings"]["reflection"]))),
                  ("top think opening", as_pct(_top_share(q["openings"]["think"]))),
                  ("answer before tool", as_pct(q["answer_before_tool"]["share"])),
                  ("grounded claims", as_pct(q["grounding"]["share"])),
                  ("median tool calls", as_float(q["tool_calls"]["median"])),
                  ("distiller phrases (rows)", as_int(q["distiller_phrases"]["rows"]))])  # fmt: skip


def _openings(openings: dict[str, Any]) -> str:
    rows = [{"kind": kind, "n": int(key[4:]), **o} for kind, figures in openings.items()
            for key, top in figures.items() if key.startswith("top_") for o in top]  # fmt: skip
    firsts = [(f"{r['kind']}: {r['opening']}", r["share_blocks"]) for r in rows if r["n"] == 3]
    chart = bar_chart("coa-openings", firsts, fmt=as_pct, color=COLORS[4]) if firsts else empty("no blocks")
    return panel(
        "Most frequent openings of trained thoughts and reflections", chart, table(OPENINGS, rows, "coa-openings")
    )


def _tool_calls(calls: dict[str, Any]) -> str:
    counts = calls["histogram"]
    if not counts:
        return f'<div class="panel"><h3>Tool calls per trajectory</h3>{empty("no tool calls recorded")}</div>'
    bins = [Bin(value, value + 1, n, integer=True) for value, n in counts.items()]
    rows = [{"value": str(value), "n": n} for value, n in counts.items()]
    title = f"Tool calls per trajectory (median {as_float(calls['median'])})"
    return panel(
        title, histogram_chart("coa-tool-calls", bins, "tool calls", COLORS[1]), table(BINS, rows, "coa-tool-calls")
    )


def _grounding(q: dict[str, Any]) -> str:
    phrases = [{"phrase": p, "n": n} for p, n in q["distiller_phrases"]["by_phrase"].items()]
    tables = (
        table(GROUNDING, [q["grounding"]], "coa-grounding", "Answer-bearing claims an observation supports")
        + table(RECALLED, [q["answer_before_tool"]], "coa-recalled", "Final answer written before the first tool")
        + table(PHRASES, phrases, "coa-distiller-phrases", "Rows holding a phrase the distiller once inserted (0)")
    )
    return f'<div class="panel"><h3>Grounding, recall and distiller text</h3>{tables}</div>'
