"""The plan of a run as step states: which step the tool agent works on, which are done or dropped.

    plan = Plan.from_steps(["Find the capital of Peru.", "Find its population."])
    step = plan.current()            # the first open step, or None
    plan.settle(step, "done")        # after the reflection judged the call made for it
    plan.text()                      # the plan as every role sees it, with each step's state

Capable models plan three steps and then do them all in one program ("covers all three
steps of my plan"), or answer after the first clean result (issue 25). Here the plan is
worked one step per tool call: the tool agent is told which step it works on, the
reflector judges that step (done, retry, drop with a reason, or re-plan), and the answer
waits until no step is open. A re-plan replaces the open steps; the work already done stays
in the run's history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

StepState = Literal["open", "done", "dropped"]
Outcome = Literal["done", "retry", "drop", "replan"]


@dataclass
class PlanStep:
    number: int  # 1-based, as the plan lists it
    text: str
    state: StepState = "open"
    calls: list[int] = field(default_factory=list)  # the run's tool-call numbers made for this step
    note: str = ""  # why it was dropped

    def line(self) -> str:
        calls = ", ".join(map(str, self.calls))
        if self.state == "done":
            status = f"done (call {calls})" if len(self.calls) == 1 else f"done (calls {calls})"
        elif self.state == "dropped":
            status = f"dropped: {self.note}" if self.note else "dropped"
        else:
            status = f"open, {len(self.calls)} call(s) so far" if self.calls else "open"
        return f"{self.number}. {self.text} [{status}]"


def first_sentence(text: str, limit: int = 240) -> str:
    """The reason as the plan shows it: its first sentence, or its first `limit` characters and an ellipsis."""
    text = " ".join(text.split())
    end = next((i + 1 for i in (text.find(". "),) if 0 <= i < limit), None)
    return text[:end] if end else (text if len(text) <= limit else text[: limit - 1].rstrip() + "…")


@dataclass
class Plan:
    steps: list[PlanStep] = field(default_factory=list)

    @classmethod
    def from_steps(cls, texts: list[str]) -> Plan:
        return cls([PlanStep(number, " ".join(text.split())) for number, text in enumerate(texts, 1)])

    def current(self) -> PlanStep | None:
        return next((step for step in self.steps if step.state == "open"), None)

    def add(self, text: str) -> PlanStep:
        """A step appended to the plan (a check the double check asked for)."""
        step = PlanStep(len(self.steps) + 1, " ".join(text.split()))
        self.steps.append(step)
        return step

    def settle(self, step: PlanStep, outcome: Outcome, note: str = "", others: list[int] = ()) -> None:
        """What the reflection decided for the step: done, dropped, or still open (retry / re-plan); `others`:
        the numbers of open steps the same result settled (a page that held a later step's fact too), done
        with this step's call, so no call is made only to find again what was already shown."""
        if outcome == "done":
            step.state = "done"
        elif outcome == "drop":
            step.state, step.note = "dropped", first_sentence(note)
        for other in self.steps:
            if other.number in others and other.state == "open" and other is not step and outcome != "replan":
                other.state, other.calls = "done", [*other.calls, *step.calls[-1:]]

    def text(self) -> str:
        return "\n".join(step.line() for step in self.steps)

    def records(self) -> list[dict]:
        """The steps as the trace keeps them (`Trace.steps`)."""
        return [asdict(step) for step in self.steps]

    def counts(self) -> dict[str, int]:
        return {
            "plan_steps": len(self.steps),
            "steps_done": sum(step.state == "done" for step in self.steps),
            "steps_skipped": sum(step.state == "dropped" for step in self.steps),
        }
