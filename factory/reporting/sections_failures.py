"""The report's Failures section: per stage, the reasons with counts and an example each (factory/failures.py)."""

from __future__ import annotations

from ..failures import Section
from .page import as_int, as_text, empty, panel, section, table
from .svg import COLORS, bar_chart

SHOWN = 12  # reasons per stage; the rest are summed in the caption
EXAMPLE_CHARS = 120
REASONS = (
    ("reason", "text", as_text),
    ("count", "count", as_int),
    ("example id (factory show)", "example_id", as_text),
    ("example", "example", as_text),
)


def failures(sections: list[Section]) -> str:
    if not sections:
        return section(
            "failures",
            "Failures",
            "Scripts, verifier attempts, coa tasks, LLM calls and filter drops.",
            [empty("nothing failed: every script, attempt, task and call in this run succeeded")],
        )
    return section("failures", "Failures",
                   "Why things failed, per stage, grouped by reason (names and numbers in a reason are folded "
                   "together), with one example each; ids open with `factory show RUN ID` or `factory ls RUN "
                   "--failed`.", [stage_panel(s) for s in sections])  # fmt: skip


def stage_panel(stage: Section) -> str:
    rows = [{"text": r.text, "count": r.count, "example_id": r.example_id,
             "example": "" if r.example == r.text else clip(r.example)} for r in stage.reasons[:SHOWN]]  # fmt: skip
    left = stage.reasons[SHOWN:]
    caption = f"{len(left)} more reasons ({sum(r.count for r in left)} items) not shown" if left else ""
    chart = bar_chart(f"failures-{stage.name}", [(r.text, r.count) for r in stage.reasons[:SHOWN]], color=COLORS[3])
    title = f"{stage.title}: {stage.failed}" + (f" ({stage.note})" if stage.note else "")
    return panel(title, chart, table(REASONS, rows, f"failures-{stage.name}", caption))


def clip(text: str) -> str:
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"
