"""HTML building blocks of the report: tables, chart+table panels, sections, the page and its CSS."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from html import escape
from typing import Any, Callable, Sequence

CSS = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #e4e7eb; --bg: #f5f7fa; --card: #fff; --accent: #4c78a8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       background: var(--bg); }
header { background: var(--ink); color: #fff; padding: 20px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header .sub { color: #cbd2d9; }
nav { padding: 8px 32px; background: #323f4b; }
nav a { color: #e4e7eb; margin-right: 16px; text-decoration: none; font-size: 13px; }
nav a:hover { text-decoration: underline; }
main { padding: 16px 32px 48px; max-width: 1400px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px;
          margin: 16px 0; }
section h2 { margin: 0 0 4px; font-size: 18px; }
section > p.intro { margin: 0 0 12px; color: var(--muted); }
.panel { margin: 12px 0 20px; }
.panel h3 { margin: 0 0 8px; font-size: 15px; }
h3.part { margin: 20px 0 6px; font-size: 17px; }
.pair { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.figure { flex: 0 1 560px; min-width: 320px; }
.figure svg { max-width: 100%; height: auto; }
/* a table too wide to sit beside its chart wraps below it rather than scroll */
.data { flex: 1 1 360px; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
th { color: var(--muted); font-weight: 600; background: #fafbfc; white-space: normal; vertical-align: bottom; }
caption { text-align: left; font-weight: 600; color: var(--muted); padding: 10px 0 4px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px;
        min-width: 150px; }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 20px; font-weight: 600; }
p.empty { color: var(--muted); font-style: italic; margin: 8px 0; }
svg text { font-size: 12px; fill: var(--ink); }
svg text.value, svg text.tick { fill: var(--muted); font-size: 11px; }
svg text.axis-label { fill: var(--muted); }
svg line.axis { stroke: #9aa5b1; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #eef1f4; padding: 0 3px;
       border-radius: 3px; }
footer { color: var(--muted); padding: 0 32px 24px; font-size: 12px; }
"""

Column = tuple[str, str, Callable[[Any], str]]  # (header, row key, formatter)


def as_int(value: Any) -> str:
    return "–" if value is None else f"{value:,.0f}"


def as_pct(value: Any) -> str:
    return "–" if value is None else f"{value:.1%}"


def as_float(value: Any) -> str:
    return "–" if value is None else f"{value:,.2f}"


def as_seconds(value: Any) -> str:
    return "–" if value is None else f"{value:.2f} s"


def as_cost(value: Any) -> str:
    return "unpriced" if value is None else f"${value:,.4f}"


def as_text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    if isinstance(value, timedelta):
        return as_duration(value.total_seconds())
    return str(value)


def as_duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


NUMERIC = (as_int, as_pct, as_float, as_seconds, as_cost)


def table(columns: Sequence[Column], rows: Sequence[dict[str, Any]], name: str, caption: str = "") -> str:
    head = "".join(
        f'<th class="num">{escape(h)}</th>' if f in NUMERIC else f"<th>{escape(h)}</th>" for h, _, f in columns
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{escape(f(row[k]))}</td>' if f in NUMERIC else f"<td>{escape(f(row[k]))}</td>"
            for _, k, f in columns
        )
        body.append(f"<tr>{cells}</tr>")
    title = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (
        f'<table data-table="{escape(name)}">{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def panel(title: str, chart: str, data: str) -> str:
    return (
        f'<div class="panel"><h3>{escape(title)}</h3><div class="pair"><div class="figure">{chart}</div>'
        f'<div class="data">{data}</div></div></div>'
    )


def empty(message: str) -> str:
    return f'<p class="empty">{escape(message)}</p>'


def _intro(intro: str) -> str:
    intro_html = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(intro))  # `table` names read as code
    return f'<p class="intro">{intro_html}</p>'


def section(anchor: str, title: str, intro: str, parts: Sequence[str]) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{_intro(intro)}{"".join(parts)}</section>'


def subsection(anchor: str, title: str, intro: str) -> str:
    """A heading inside a section (one part per path), with its own intro."""
    return f'<h3 class="part" id="{anchor}">{escape(title)}</h3>{_intro(intro)}'


def cards(items: Sequence[tuple[str, str]]) -> str:
    inner = "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{escape(v)}</div></div>' for k, v in items
    )
    return f'<div class="cards">{inner}</div>'


def document(title: str, subtitle: str, nav: Sequence[tuple[str, str]], body: Sequence[str], footer: str) -> str:
    links = "".join(f'<a href="#{anchor}">{escape(label)}</a>' for anchor, label in nav)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{escape(title)}</h1><div class="sub">{escape(subtitle)}</div></header>'
        f"<nav>{links}</nav><main>{''.join(body)}</main><footer>{escape(footer)}</footer></body></html>"
    )
