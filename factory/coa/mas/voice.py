"""The distilled trajectory reads as one agent: no text an agent wrote speaks of a team.

The roles are prompted as one solver (prompts/coa/voice.md), yet a model can
still write "the team should confirm" or "the verifier will check", which the
single-agent trajectory would then teach. `team_talk(trace)` finds such a
phrase in the agents' own text (thinks, plans, reflections, check comments,
answers). A phrase that the question or an observation contains is not
counted: a question about a football team may say "team". batch.py stores a
trace with team talk as a failure under the rule `team_talk`.
"""

from __future__ import annotations

import re

from ..trace import Trace

RULE = "team_talk"
TEAM_TALK = re.compile(
    r"\b(?:team(?:mates?|s)?|other agents?|another agent|(?:search|code) agents?|multi-agent|"
    r"the (?:planner|reflector|verifier|answerer))\b",  # with "the": "a verifier function" is code talk
    re.IGNORECASE,
)


def team_talk(trace: Trace) -> str | None:
    """Where the first team talk is ("the reflector's think says 'the team'"), or None."""
    given = " ".join([trace.question, *(call.result for call in trace.tool_calls())]).lower()
    for event in trace.events:
        fields = {"think": event.think} if event.kind == "tool_call" else {"think": event.think, "text": event.content}
        for field, text in fields.items():
            for match in TEAM_TALK.finditer(text or ""):
                if not given_word(match.group(0), given):
                    return f"the {event.agent}'s {field} says '{quote(text or '', match)}'"
    return None


def given_word(phrase: str, given: str) -> bool:
    """Whether the question or an observation uses the word itself ("teams" when it says "team")."""
    root = phrase.lower().removeprefix("the ")
    root = "team" if root.startswith("team") else root
    return re.search(rf"\b{re.escape(root)}", given) is not None


def quote(text: str, match: re.Match[str], width: int = 40) -> str:
    """The phrase with a little of its sentence around it."""
    return " ".join(text[max(0, match.start() - width) : match.end() + width].split())
