"""Python values as SQLite stores them (the store's writes); copies.py casts them back when DuckDB reads."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Iterable

PLAIN = frozenset((str, int, float, bool, bytes))
PLAIN_OR_NONE = PLAIN | {type(None)}


def sql_value(value: Any) -> Any:
    """A Python value as SQLite stores it: timestamps as ISO text (DuckDB casts them back), lists and
    dicts as JSON text, numpy scalars as Python numbers."""
    if value is None or type(value) in PLAIN:  # most values: nothing to do (and a commit per answer pays this)
        return value
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, Decimal):  # DuckDB's type for a decimal literal such as 1.0
        return float(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def sql_params(params: Iterable[Any] | None) -> list[Any] | tuple[Any, ...]:
    values = params if isinstance(params, (list, tuple)) else list(params or ())
    if PLAIN_OR_NONE.issuperset(map(type, values)):  # checked in C: a bulk insert of plain rows pays ~nothing
        return values
    return [sql_value(v) for v in values]
