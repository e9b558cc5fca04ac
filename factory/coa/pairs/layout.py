"""The answer from recall laid out in the grammar of its variant's trajectories, and checked by it.

The recall side follows the trajectory's prompt: the AFM instruction, which demands its grammar
(docs/afm_format.md), and the stage-2 rows with the same prompt always follow it. A side that skipped
the plan or the double check would teach, through the preference loss and its SFT term, to skip them.
So the side is a whole AFM completion with no tool call, every block in the model's own words:

- mas (the web agent): think, plan, think, suggested_answer, think, double_check (its comment, then
  `score: N`), answer. This is how the distilled rows end a run that answers after its double check:
  the answer repeats the suggested one, with no think before it (factory/coa/mas/loop.py).
- code (the math / code agent): plan, think, answer, AFM's `plan, (think, code, observation,
  reflection)*N, think, answer` with N = 0. The code agent writes no double check and no scores, and
  nothing goes before its plan; as distill.py leaves out the first plan's think and an accepted double
  check, so does this layout (the score still decides the pair: rule.py).

The side stands where the trajectory's first assistant turn stands (a coa row's prompt is one user
turn), so it is checked as a whole completion by `validate_afm`, with the variant's answer format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..afm import GrammarVerdict, double_check_text, make_blocks, render_single, validate_afm
from ..distill import answer_format, code_answer, unboxed
from ..roles import formatted_answer

if TYPE_CHECKING:
    from .recall import RecallReply

Pairs = list[tuple[str, str]]


@dataclass(frozen=True)
class RecallAnswer:
    text: str  # the AFM completion: the side of the pair
    answer: str  # what the checker judges (the <answer> body)
    score: int  # the model's own double check, 1-4
    verdict: GrammarVerdict  # the text as the variant's grammar judges it


def numbered(steps: list[str]) -> str:
    """A plan's steps as the planner's are written (Planner.parse): `1. …` a line each."""
    return "\n".join(f"{i}. {' '.join(step.split())}" for i, step in enumerate(steps, 1))


def web_pairs(reply: RecallReply, answer: str) -> Pairs:
    check = double_check_text(reply.score, reply.comment)
    return [("think", reply.plan_think), ("plan", numbered(reply.steps)), ("think", reply.think),
            ("suggested_answer", answer), ("think", reply.check_think), ("double_check", check),
            ("answer", answer)]  # fmt: skip


def code_pairs(reply: RecallReply, answer: str, domain: str) -> Pairs:
    """`\\boxed{}` only in the answer, which holds it alone (or one ```py block for a code task)."""
    return [
        ("plan", unboxed(numbered(reply.steps))),
        ("think", unboxed(reply.think)),
        ("answer", code_answer(answer, domain)),
    ]


def afm_text(pairs: Pairs) -> str:
    return render_single("", make_blocks(pairs)).completion


def lay_out(reply: RecallReply, variant: str, domain: str) -> RecallAnswer:
    answer = formatted_answer(reply.answer, domain)
    pairs = code_pairs(reply, answer, domain) if variant == "code" else web_pairs(reply, answer)
    text = afm_text(pairs)
    verdict = validate_afm(text, "code" if variant == "code" else "mas", answer_format(variant, domain))
    return RecallAnswer(text, dict(pairs)["answer"], reply.score, verdict)
