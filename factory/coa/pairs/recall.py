"""The recall role: the agent at its decision point, answering from what it knows instead of acting.

The request is the trajectory's own prompt (the AFM instruction with the question, exactly the
context the acting side continues) after one system message, prompts/coa/recall.md: work as the
instruction asks, with every function but the tools, and answer now. The reply is JSON, one key per
block the variant's grammar needs (layout.py): the reasoning before the plan, the plan's steps, the
reasoning to the answer, the answer, the double check's reasoning, its comment and its 1-4 score, the
model's own. Every free text is bounded like the coa roles' (coa.reply_chars; the two extra thinks as
`think`). A reply that writes tags of its own fails its schema (the client asks again, then records
the failed call): its text would not read as the blocks it is put in.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model, model_validator

from ...llm import Request
from ...llm.role import Role
from ...prompts import render_prompt
from ..afm import layout_violations, scan
from ..config import ReplyLimits
from ..roles import ANSWER_FORMATS, MAX_PLAN_STEPS, Step, Think, bounded_reply
from .layout import RecallAnswer, afm_text, lay_out, web_pairs
from .points import DecisionPoint

STAGE = "coa_pairs"
SCORES = (
    "1 surely wrong, 2 unsure (you would look it up or run it if you could), 3 sure, 4 sure and confirmed another way"
)


class RecallReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_think: Think = Field(description="why you plan as you do: what the question needs, what you know of it")
    steps: list[Step] = Field(min_length=1, max_length=MAX_PLAN_STEPS, description="your plan")
    think: Think = Field(description="your reasoning to the answer")
    answer: str = Field(min_length=1, max_length=4000, description="the answer as you would submit it")
    check_think: Think = Field(description="your double check: the question's exact ask, each fact and step")
    comment: str = Field(min_length=1, max_length=600, description="why this score")
    score: int = Field(ge=1, le=4, description=SCORES)

    @model_validator(mode="after")
    def _plain_text(self) -> "RecallReply":
        problem = tag_problem(self)
        if problem:
            raise ValueError(problem)
        return self


def tag_problem(reply: RecallReply) -> str | None:
    """Why a text, put in its block, would not read as that block (a tag or marker in it), or None."""
    text = afm_text(web_pairs(reply, reply.answer))  # every text field, each in its block
    scanned = scan(text)
    found = scanned.violations + layout_violations(text, scanned.blocks)
    if not found:
        return None
    return f"{found[0].message}; write plain text: each part is put in its tags for you"


@lru_cache(maxsize=None)
def recall_reply(limits: ReplyLimits) -> type[RecallReply]:
    """RecallReply bounded like the coa roles' replies; the thinks before the plan and the check as `think`."""
    bounded = bounded_reply(RecallReply, limits)
    think = Annotated[str, StringConstraints(min_length=1, max_length=limits.resolved(False).think)]
    thinks = {
        name: (think, Field(description=RecallReply.model_fields[name].description))
        for name in ("plan_think", "check_think")
    }
    return create_model(RecallReply.__name__, __base__=bounded, **thinks)


class Recall(Role):
    """`request(point, domain)` -> the no-tool continuation's Request; `parse(reply, variant, domain)` -> RecallAnswer."""

    name, reply_type = "recall", RecallReply

    def __init__(self, limits: ReplyLimits | None = None):
        self.response_model = recall_reply(limits or ReplyLimits())

    def request(self, point: DecisionPoint, domain: str) -> Request:
        system = render_prompt("coa/recall", answer_format=ANSWER_FORMATS[domain])
        messages = [{"role": "system", "content": system}, *point.prompt]
        return Request(messages, self.response_model, stage=STAGE, tag=point.trajectory_id)

    def parse(self, reply: RecallReply, variant: str, domain: str) -> RecallAnswer:
        return lay_out(reply, variant, domain)
