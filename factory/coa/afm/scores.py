"""The scores carried inside `<reflection>` and `<double_check>` blocks.

The AFM web-agent prompt asks the reflection to rate three criteria as
good / average / poor (re-plan if any is poor) and the double check to score the
suggested answer from 1 to 4 (re-plan at <= 2, answer at >= 3). It fixes no
syntax, so the factory writes, and the grammar reads, one line per score:

    information_conflict: good
    tool_effectiveness: poor
    trajectory_progress: average

    score: 3

Reading is lenient where it costs nothing: criteria may be spelled with spaces
and any case, may carry list markers or bold (`(2) **Tool Effectiveness**: Poor`),
"trajectory monitoring" (the prompt's own name) means trajectory_progress, and
"fair" means average. The double-check score line may read `score: 3`,
`Score = 3/4` or `The score this time is: 3`; failing that, a first line holding
only the number counts. The last score in a block wins, since a block may quote
earlier scores before concluding.
"""

from __future__ import annotations

import re

CRITERIA = ("information_conflict", "tool_effectiveness", "trajectory_progress")
RATINGS = ("good", "average", "poor")

_MARKERS = r"^[ \t>*#\-\d.()]*"  # list numbering, bullets, quotes, bold before the name
_REFLECTION_LINE = re.compile(
    _MARKERS + r"(information[ _]conflict|tool[ _]effectiveness|trajectory[ _](?:progress|monitoring))"
    r"\**[ \t]*[:=\-][ \t]*\**(good|average|fair|poor)\b",
    re.IGNORECASE | re.MULTILINE,
)
_SCORE_LINE = re.compile(
    _MARKERS + r"(?:the[ \t]+)?score(?:[ \t]+this[ \t]+time)?(?:[ \t]+is)?\**[ \t]*[:=]?[ \t]*\**([1-4])\**"
    r"(?:[ \t]*/[ \t]*4)?[ \t]*\.?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_BARE_SCORE = re.compile(r"\A\s*([1-4])[ \t]*(?:/[ \t]*4)?[ \t]*$", re.MULTILINE)


def reflection_scores(text: str) -> dict[str, str]:
    """criterion -> good|average|poor for every score line found (none: {})."""
    scores = {}
    for name, rating in _REFLECTION_LINE.findall(text):
        criterion = "_".join(name.lower().split()).replace("monitoring", "progress")
        scores[criterion] = "average" if rating.lower() == "fair" else rating.lower()
    return scores


def reflection_is_poor(text: str) -> bool:
    """A reflection without score lines is not poor: nothing asks for a re-plan."""
    return "poor" in reflection_scores(text).values()


def double_check_score(text: str) -> int | None:
    """The 1-4 score of a double check, or None when none is written in a readable way."""
    found = _SCORE_LINE.findall(text) or _BARE_SCORE.findall(text)
    return int(found[-1]) if found else None


def reflection_text(scores: dict[str, str], comment: str = "") -> str:
    """The canonical reflection body: comment, then one line per criterion."""
    lines = [comment.strip()] if comment.strip() else []
    lines += [f"{criterion}: {scores[criterion]}" for criterion in CRITERIA if criterion in scores]
    return "\n".join(lines)


def double_check_text(score: int, comment: str = "") -> str:
    """The canonical double-check body: comment, then `score: N`."""
    return "\n".join([comment.strip(), f"score: {score}"] if comment.strip() else [f"score: {score}"])
