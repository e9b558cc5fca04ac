"""Which domain a task row belongs to (qa, math or code) when the row does not say."""

from __future__ import annotations

import re

from .model import DOMAINS

MATH_SOURCE = re.compile(r"math|amc|aime|gsm|olympiad|minerva|hmmt", re.IGNORECASE)
CODE_ABILITIES = frozenset({"code", "coding", "programming"})


def infer_domain(row: dict, source: str, tests: dict | None) -> str:
    if row.get("domain") in DOMAINS:
        return row["domain"]
    ability = str(row.get("ability") or "").lower()
    if tests is not None or ability in CODE_ABILITIES:
        return "code"
    # MATH-500 rows say ability "fact-reasoning", so the source name decides first.
    if "math" in ability or MATH_SOURCE.search(source):
        return "math"
    return "qa"
