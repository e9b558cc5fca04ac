"""The `factory ls` table: aligned columns that fit a 120-column terminal, reasons cut to fit."""

from __future__ import annotations

from .listing import Listed

WIDTH = 120
MAX_ID = 32
HEADERS = ("id", "source", "ok", "export", "correct", "turns", "tools", "fixes", "reason")


def _flag(value: bool | None) -> str:
    return {True: "yes", False: "no"}.get(value, "-")


def _export(row: Listed) -> str:
    if row.kept:
        return "kept"
    return "dropped" if row.dropped else "-"  # unverified rows are never exported: nothing to keep or drop


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def cells(row: Listed) -> tuple[str, ...]:
    return (row.id, row.source, _flag(row.verified), _export(row), _flag(row.correct), _number(row.turns),
            _number(row.tools), _number(row.fixes), " ".join(row.reason.split()))  # fmt: skip


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def format_table(rows: list[Listed]) -> list[str]:
    table = [HEADERS, *(cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS) - 1)]
    widths[0] = min(widths[0], MAX_ID)
    reason_width = max(WIDTH - sum(widths) - 2 * (len(widths)), 10)
    lines = []
    for line in table:
        fixed = [cut(value, width).ljust(width) for value, width in zip(line, widths)]
        lines.append("  ".join([*fixed, cut(line[-1], reason_width)]).rstrip())
    return lines
