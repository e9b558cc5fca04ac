"""The recall role: the agent at its decision point, answering from what it knows instead of acting.

The request is the trajectory's own prompt (the AFM instruction with the question, exactly the
context the acting side continues) after one system message, prompts/coa/recall.md: answer now,
with no tool, the way you would submit it. The reply is JSON (`think`, `answer`), bounded like
the coa roles' (coa.reply_chars), and is laid out here in AFM's tags, as distill.py lays out the
agents' text: `<think>…</think>` then `<answer>…</answer>`, the answer in the form the task's
checker and the variant want (`\\boxed{}` for math, one ```py block for code). A reply that
writes tags of its own fails its schema (the client asks again, then records the failed call):
its text would not read as these two blocks.

The two blocks are the next step at the decision point, like the acting side that ends at its
tool call, not a whole trajectory: the order rules of a whole AFM row (a plan first, an answer
only after a double check) are not asked of them; the block rules are.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...llm import Request
from ...llm.role import Role
from ...prompts import render_prompt
from ..afm import layout_violations, make_blocks, render_single, scan
from ..config import ReplyLimits
from ..distill import code_answer, unboxed
from ..roles import ANSWER_FORMATS, bounded_reply, formatted_answer
from .points import DecisionPoint

STAGE = "coa_pairs"


def afm_answer(think: str, answer: str) -> str:
    """The two blocks as AFM writes them: `<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>`."""
    return render_single("", make_blocks([("think", think), ("answer", answer)])).completion


def tag_problem(think: str, answer: str) -> str | None:
    """Why the laid-out text would not read as exactly these two blocks (a tag or marker in the text), or None."""
    text = afm_answer(think, answer)
    scanned = scan(text)
    found = scanned.violations + layout_violations(text, scanned.blocks)
    if not found:
        return None
    return f"{found[0].message}; write plain text: the think and the answer are put in their tags for you"


class RecallReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    think: str = Field(min_length=1, max_length=800, description="your reasoning, in the first person")
    answer: str = Field(min_length=1, max_length=4000, description="the answer as you would submit it")

    @model_validator(mode="after")
    def _plain_text(self) -> "RecallReply":
        problem = tag_problem(self.think, self.answer)
        if problem:
            raise ValueError(problem)
        return self


@dataclass(frozen=True)
class RecallAnswer:
    text: str  # the AFM continuation: <think>…</think>\n<answer>…</answer>
    answer: str  # what the checker judges (the <answer> body)


class Recall(Role):
    """`request(point, domain)` -> the no-tool continuation's Request; `parse(reply, variant, domain)` -> RecallAnswer."""

    name, reply_type = "recall", RecallReply

    def __init__(self, limits: ReplyLimits | None = None):
        self.response_model = bounded_reply(RecallReply, limits or ReplyLimits())

    def request(self, point: DecisionPoint, domain: str) -> Request:
        system = render_prompt("coa/recall", answer_format=ANSWER_FORMATS[domain])
        messages = [{"role": "system", "content": system}, *point.prompt]
        return Request(messages, self.response_model, stage=STAGE, tag=point.trajectory_id)

    def parse(self, reply: RecallReply, variant: str, domain: str) -> RecallAnswer:
        think, answer = reply.think.strip(), formatted_answer(reply.answer, domain)
        if variant == "code":  # AFM's code agent: \boxed{} only in the answer, which holds it alone
            think, answer = unboxed(think), code_answer(answer, domain)
        return RecallAnswer(afm_answer(think, answer), answer)
