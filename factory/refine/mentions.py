"""A script's names as a thought may write them, and one pattern that finds them in text.

    name_forms("safety_harness")  -> ["safety_harness", "safety harness", "harness"]
    name_pattern({"harness": "safety_harness", ...})  -> r"\b(safety harness|harness|...)\b", longest first

Shared by the grounded-thought check (grounded_thoughts.py) and the thought-action check (thought_actions.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .narration import display
from .prose import PARTICLES


def name_forms(name: str) -> list[str]:
    """A name as a thought may write it: `safety_harness`, "safety harness", "harness"."""
    spoken = display(name).lower()
    forms = [name.lower(), spoken]
    head = spoken.split()[-1]
    if len(head) >= 3 and head not in PARTICLES and not head.isdigit():
        forms.append(head)
    return list(dict.fromkeys(forms))


def name_pattern(forms: Iterable[str]) -> str:
    """One group matching any of these forms as whole words, the longest first; one that never matches if none."""
    ordered = sorted(set(forms), key=lambda f: (-len(f), f))
    return r"\b(" + "|".join(re.escape(f) for f in ordered) + r")\b" if ordered else r"(?!x)x"
