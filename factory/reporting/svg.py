"""Inline SVG charts, drawn in Python so the report needs no script and no network.

Each chart is one `<svg class="chart" data-chart=NAME>`; every bar carries a
`<title>` with its exact value, which the browser shows on hover.
"""

from __future__ import annotations

from html import escape
from typing import Callable, Sequence

from .sql import Bin

WIDTH = 560
BAR_H, GAP = 20, 6
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#bab0ac")
LABEL_CHARS = 28
LABEL_W, VALUE_W = 210, 80  # room for a label of LABEL_CHARS characters; for the value after a bar

Format = Callable[[float], str]


def fmt_int(value: float) -> str:
    return f"{value:,.0f}"


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _svg(name: str, height: float, body: list[str], summary: str) -> str:
    return (
        f'<svg class="chart" data-chart="{escape(name)}" role="img" aria-label="{escape(summary)}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" width="{WIDTH}" height="{height:.0f}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{escape(text)}</text>'


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{color}" rx="2">'
        f"<title>{escape(tip)}</title></rect>"
    )


def bar_chart(name: str, items: Sequence[tuple[str, float]], fmt: Format = fmt_int, color: str = COLORS[0]) -> str:
    """Horizontal bars, largest scale first as given; labels left, values right."""
    label_w, span = LABEL_W, WIDTH - LABEL_W - VALUE_W
    top = max((value for _, value in items), default=0) or 1
    body = []
    for i, (label, value) in enumerate(items):
        y = 8 + i * (BAR_H + GAP)
        body.append(_text(label_w - 8, y + 14, _short(label), "end"))
        body.append(_rect(label_w, y, span * value / top, BAR_H, color, f"{label}: {fmt(value)}"))
        body.append(_text(label_w + span * value / top + 6, y + 14, fmt(value), cls="value"))
    height = 16 + len(items) * (BAR_H + GAP)
    return _svg(name, height, body, f"bar chart, {len(items)} bars")


def funnel_chart(name: str, stages: Sequence[tuple[str, int]]) -> str:
    """Centred bars, each with its count and its share of the first stage."""
    first = stages[0][1] if stages else 0
    top = max((n for _, n in stages), default=0) or 1
    body = []
    for i, (label, n) in enumerate(stages):
        y = 8 + i * (BAR_H + 2 * GAP)
        width = max((WIDTH - 260) * n / top, 2)
        share = f" ({n / first:.0%})" if first and i else ""
        body.append(_text(120, y + 14, label, "end"))
        body.append(_rect(130 + (WIDTH - 260 - width) / 2, y, width, BAR_H, COLORS[i % len(COLORS)], f"{label}: {n}"))
        body.append(_text(WIDTH - 122, y + 14, f"{n:,}{share}", cls="value"))
    return _svg(name, 16 + len(stages) * (BAR_H + 2 * GAP), body, f"funnel, {len(stages)} stages")


def stacked_bars(
    name: str, items: Sequence[tuple[str, Sequence[float]]], series: Sequence[str], fmt: Format = fmt_int
) -> str:
    """Horizontal bars split into series (e.g. prompt and completion tokens), with a legend on top."""
    label_w, span = LABEL_W, WIDTH - LABEL_W - VALUE_W
    top = max((sum(parts) for _, parts in items), default=0) or 1
    body = []
    for k, serie in enumerate(series):
        body.append(f'<rect x="{label_w + k * 150}" y="4" width="12" height="12" fill="{COLORS[k]}"/>')
        body.append(_text(label_w + k * 150 + 18, 14, serie))
    for i, (label, parts) in enumerate(items):
        y = 26 + i * (BAR_H + GAP)
        body.append(_text(label_w - 8, y + 14, _short(label), "end"))
        x = float(label_w)
        for k, part in enumerate(parts):
            width = span * part / top
            body.append(_rect(x, y, width, BAR_H, COLORS[k % len(COLORS)], f"{label} {series[k]}: {fmt(part)}"))
            x += width
        body.append(_text(x + 6, y + 14, fmt(sum(parts)), cls="value"))
    return _svg(name, 34 + len(items) * (BAR_H + GAP), body, f"stacked bars, {len(items)} bars")


def histogram_chart(name: str, bins: Sequence[Bin], x_label: str, color: str = COLORS[0]) -> str:
    """Vertical bars, one per bin; the y axis shows the tallest count, the x axis every few bin labels."""
    left, right, top_pad, plot_h = 48, 12, 12, 160
    plot_w = WIDTH - left - right
    peak = max((b.count for b in bins), default=0) or 1
    step = plot_w / max(len(bins), 1)
    every = max(1, -(-len(bins) // 8))  # at most ~8 x labels so they do not overlap
    base = top_pad + plot_h
    body = [
        f'<line x1="{left}" y1="{base}" x2="{WIDTH - right}" y2="{base}" class="axis"/>',
        _text(left - 6, top_pad + 10, f"{peak:,}", "end", "tick"),
        _text(left - 6, base, "0", "end", "tick"),
    ]
    for i, b in enumerate(bins):
        h = plot_h * b.count / peak
        body.append(_rect(left + i * step + 1, top_pad + plot_h - h, step - 2, h, color, f"{b.label}: {b.count:,}"))
        if i % every == 0:
            body.append(_text(left + (i + 0.5) * step, top_pad + plot_h + 16, b.label, "middle", "tick"))
    body.append(_text(left + plot_w / 2, top_pad + plot_h + 36, x_label, "middle", "axis-label"))
    return _svg(name, top_pad + plot_h + 44, body, f"histogram of {x_label}, {len(bins)} bins")
