"""An LLM as the judge: a structured verdict {rationale, correct: 0|1} per reply.

    judge = LLMJudge(llm)                       # llm: a started-or-not factory.llm.LLMClient
    result = await judge.acheck(reply, task)    # async only: the client lives on its loop

A failed call (transport, a reply that fails the schema after the client's own
re-asks) becomes a CheckResult with `error` set, never an exception.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..llm import LLMClient, Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from ..tasks import Task
from .base import Checker, CheckError, CheckResult, failure

STAGE = "check"


class JudgeVerdict(BaseModel):
    rationale: str = Field(max_length=1200, description="at most three sentences")
    correct: Literal[0, 1]


class JudgeRole(Role):
    """The judge's prompt, reply type and parse (factory.llm.role, DESIGN rule 6); no I/O."""

    name, reply_type = "judge", JudgeVerdict

    def __init__(self, max_question_chars: int = 4000, max_reply_chars: int = 8000):
        self.max_question_chars = max_question_chars
        self.max_reply_chars = max_reply_chars

    def request(self, prediction: str, task: Task) -> Request:
        references = "\n".join(f"- {answer}" for answer in task.answers) or "(none given)"
        user = render_prompt(
            "checks/judge_user",
            question=head(task.question, self.max_question_chars),
            references=references,
            prediction=tail(prediction, self.max_reply_chars),
        )
        return Request(chat(load_prompt("checks/judge_system"), user), self.reply_type, stage=STAGE, tag=task.id)

    @staticmethod
    def parse(verdict: JudgeVerdict) -> CheckResult:
        return CheckResult(correct=verdict.correct == 1, score=float(verdict.correct), detail=verdict.rationale[:300])


def head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def tail(text: str, limit: int) -> str:
    # The final answer sits at the end of a reply, so a long one loses its beginning.
    return text if len(text) <= limit else "[...] " + text[-limit:]


class LLMJudge(Checker):
    name = "llm_judge"

    def __init__(self, llm: LLMClient, role: JudgeRole | None = None):
        self.llm = llm
        self.role = role or JudgeRole()

    async def acheck(self, prediction: str, task: Task) -> CheckResult:
        result = await self.llm.run(self.role.request(prediction, task))
        if not result.ok:
            return failure(f"judge {result.error_kind}: {(result.error or '')[:160]}")
        return self.role.parse(result.parsed)

    def check(self, prediction: str, task: Task) -> CheckResult:
        raise CheckError("llm_judge is async only: use `await judge.acheck(prediction, task)`")
