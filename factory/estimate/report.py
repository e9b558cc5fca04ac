"""The dry run's output: per stage a small aligned table (expected and most), its notes, then the totals and
whether they fit the spend cap; or the same as JSON."""

from __future__ import annotations

import json

from .model import Part, StageEstimate, stage_json, summed_cost, total_of
from .pricing import PRICE_HINT

HEADER = ("part", "requests", "prompt tokens", "completion tokens", "cost USD")


def format_estimates(estimates: list[StageEstimate], footer: list[str]) -> str:
    lines = []
    for estimate in estimates:
        lines += [
            f"{estimate.stage}: model {estimate.model}; {estimate.items} {estimate.unit}s to do",
            f"  prompt tokens: {estimate.token_method}",
            f"  price: {estimate.pricing.describe()}",
            "  each figure: expected / most",
        ]
        rows = [_row(part, part.cost()) for part in estimate.parts]
        rows.append(_row(estimate.total(), summed_cost(estimate.parts)))
        lines += [f"  {line}" for line in _table(rows)]
        lines += [f"  - {note}" for note in estimate.notes]
    lines += footer
    return "\n".join(lines)


def totals(estimates: list[StageEstimate]) -> tuple[Part, tuple[float | None, float | None]]:
    parts = [e.total() for e in estimates]
    costs = [summed_cost(e.parts) for e in estimates]
    known = None if any(c[0] is None for c in costs) else (sum(c[0] for c in costs), sum(c[1] for c in costs))
    return total_of(parts, estimates[0].pricing if estimates else None), known or (None, None)


def total_line(estimates: list[StageEstimate]) -> str:
    total, (low, high) = totals(estimates)
    cost = f"${low:.4f} expected, ${high:.4f} at most" if low is not None else f"unknown ({PRICE_HINT})"
    return (
        f"total: {_n(total.requests.expected)} requests expected ({_n(total.requests.most)} at most), "
        f"{_n(total.prompt_tokens.expected)} prompt + {_n(total.completion_tokens.expected)} completion tokens "
        f"expected; cost {cost}"
    )


def as_json(estimates: list[StageEstimate], footer: list[str]) -> str:
    return json.dumps({"stages": [stage_json(e) for e in estimates], "summary": footer}, indent=2)


def _row(part: Part, cost: tuple[float | None, float | None]) -> tuple[str, ...]:
    def pair(expected: float, most: float) -> str:
        return f"{_n(expected)} / {_n(most)}"

    shown = "unknown" if cost[0] is None else f"{cost[0]:.4f} / {cost[1]:.4f}"
    return (part.name, pair(part.requests.expected, part.requests.most),
            pair(part.prompt_tokens.expected, part.prompt_tokens.most),
            pair(part.completion_tokens.expected, part.completion_tokens.most), shown)  # fmt: skip


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    header = HEADER
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(HEADER))]
    return [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    ]


def _n(value: float) -> str:
    return f"{round(value):,}"
