"""What every checker is and what it answers."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import FactoryError
from ..sandbox.api import run_sync  # asyncio.run, in a helper thread when a loop is already running
from ..tasks import Task


class CheckError(FactoryError):
    """A checker was asked for by a name that does not exist, or without what it needs."""


class CheckResult(BaseModel):
    correct: bool
    score: float = Field(ge=0.0, le=1.0)  # 1.0 for correct; partial credit where the checker has it
    detail: str = ""  # one short line: why, for reports and filters
    # Set when the checker could not decide (a judge that replied garbage, a math
    # parse that timed out): `correct` is then False, but it is not a verdict on the answer.
    error: str | None = None


def failure(error: str) -> CheckResult:
    return CheckResult(correct=False, score=0.0, detail=error, error=error)


class Checker:
    """A named correctness check. Sync checkers implement `check`; async ones `acheck`.

    `acheck` works for every checker, so batch code awaits it; `check` is the
    convenience for scripts and tests.
    """

    name: str = "checker"

    def check(self, prediction: str, task: Task) -> CheckResult:
        return run_sync(self.acheck(prediction, task))

    async def acheck(self, prediction: str, task: Task) -> CheckResult:
        return self.check(prediction, task)
