"""The report's "Quality" section: the figures of `factory.refine.quality` (refine), of
`refine.quality_rows` (inside each refine row; sections_refine_rows.py) and of `reporting.coa_quality`
(coa, import; sections_coa_quality.py), as tiles, charts and tables."""

from __future__ import annotations

from html import escape
from typing import Any

from .page import as_float, as_int, as_pct, as_text, cards, empty, panel, section, subsection, table
from .sections_coa_quality import coa_quality_parts
from .sections_refine_rows import row_quality_parts
from .sql import Bin
from .svg import COLORS, bar_chart, histogram_chart

OUTCOME_LABELS = {"completed": "last action completes", "held_before_end": "goal held before the end",
                  "not_reached": "goal not reached", "unknown": "unknown (no goal)"}  # fmt: skip
COMPLETION = [("outcome", "outcome", as_text), ("trajectories", "n", as_int), ("share", "share", as_pct)]
BINS = [("value", "value", as_text), ("trajectories", "n", as_int)]
ERROR_MIX = [("error type", "type", as_text), ("mistakes", "n", as_int), ("share", "share", as_pct)]
THOUGHTS = [
    ("mistaken turns", "mistaken_turns", as_int),
    ("repeat another row's", "repeated", as_int),
    ("share", "share_repeated", as_pct),
    ("most common opening", "top_prefix", as_text),
    ("turns", "top_prefix_turns", as_int),
    ("share", "top_prefix_share", as_pct),
]
DIVERSITY = [
    ("measure", "measure", as_text),
    ("distinct", "distinct", as_int),
    ("total", "total", as_int),
    ("distinct share", "share", as_pct),
]
INTRO = (
    "Over verified refine trajectories. Completion replays each trajectory's actions in its script's world: "
    "the last action completes the task when the goal first holds after it; a script without a declared "
    "goal counts as unknown. Mistake positions are 1-based assistant turns; a thought is the text before "
    "`Action:`."
)


SECTION_INTRO = "Is the data worth training on? One part per path, each over its verified trajectories."


def quality(q: dict[str, Any], coa: dict[str, Any] | None = None, rows: dict[str, Any] | None = None) -> str:
    """The refine figures `q` and those inside each row `rows`, then the coa/import figures `coa` (when given)."""
    head = subsection("refine-quality", "AgentRefine (refine)", INTRO)
    inside = row_quality_parts(rows) if rows is not None else []
    parts = [head, *_refine_parts(q), *inside, *(coa_quality_parts(coa) if coa is not None else [])]
    return section("quality", "Quality", SECTION_INTRO, parts)


def _refine_parts(q: dict[str, Any]) -> list[str]:
    if not q["verified"]:
        return [empty("no verified refine trajectories")]
    thoughts, spread = q["thoughts"], q["distinct_actions_per_row"]
    tiles = cards([("verified", as_int(q["verified"])),
                   ("last action completes", as_pct(q["completion"]["share_completed"])),
                   ("first turn trains", as_pct(q["first_turn_trains"])),
                   ("mistaken thoughts repeated", as_pct(thoughts["share_repeated"])),
                   ("top thought opening", as_pct(thoughts["top_prefix_share"])),
                   ("distinct actions / row", as_float(spread["mean"]))])  # fmt: skip
    parts = [tiles, _completion(q), _histogram_panel("First mistake (assistant turn)", "first-mistake",
                                                     q["first_mistake"], "assistant turn of the first mistake"),
             _histogram_panel("Mistakes per trajectory", "mistakes-per-row", q["mistakes_per_row"], "mistakes"),
             _mix_and_thoughts(q), _diversity(q["diversity"])]  # fmt: skip
    return parts


def _completion(q: dict[str, Any]) -> str:
    done = q["completion"]
    rows = [{"outcome": OUTCOME_LABELS[k], "n": done[k], "share": done[k] / q["verified"]} for k in OUTCOME_LABELS]
    chart = bar_chart("completion", [(r["outcome"], r["n"]) for r in rows], color=COLORS[2])
    return panel("Does the last action complete the task?", chart, table(COMPLETION, rows, "completion"))


def _histogram_panel(title: str, name: str, counts: dict[int, int], x_label: str) -> str:
    if not counts:
        return f'<div class="panel"><h3>{escape(title)}</h3>{empty("no mistakes recorded")}</div>'
    bins = [Bin(value, value + 1, n, integer=True) for value, n in counts.items()]
    rows = [{"value": str(value), "n": n} for value, n in counts.items()]
    return panel(title, histogram_chart(name, bins, x_label, COLORS[3]), table(BINS, rows, name))


def _mix_and_thoughts(q: dict[str, Any]) -> str:
    total = sum(q["error_types"].values())
    mix = [{"type": t, "n": n, "share": n / total} for t, n in q["error_types"].items()]
    chart = bar_chart("error-mix", [(r["type"], r["n"]) for r in mix], color=COLORS[3]) if mix else empty("none")
    words = q["thoughts"]["prefix_words"]
    tables = table(ERROR_MIX, mix, "error-mix") + table(
        THOUGHTS,
        [q["thoughts"]],
        "thoughts",
        f"Thoughts of mistaken turns (opening = first {words} words, lower-cased)",
    )
    return panel("Error types and the thoughts behind mistakes", chart, tables)


def _diversity(div: dict[str, Any]) -> str:
    grams = div["task_ngrams"]
    rows = [{"measure": f"task {grams['n']}-grams", **grams}]
    for key, label in (("action_names", "action names"), ("location_names", "location names")):
        d = div[key]
        rows.append({"measure": label, **d, "share": d["distinct"] / d["total"] if d["total"] else None})
    caption = f"Across the {div['scripts']} scripts of the verified trajectories"
    inner = table(DIVERSITY, rows, "diversity", caption)
    return f'<div class="panel"><h3>Diversity across environments</h3>{inner}</div>'
