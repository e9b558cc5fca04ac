"""Which pair one judged recall answer makes, if any (docs/when_to_act.md), and the row it is stored as.

- recall wrong, the trajectory right (or unjudged): `when_to_act`; chosen = the turn that calls the
  tool, rejected = the recall answer. Recall wrong and the trajectory wrong too: no evidence that
  acting helps here, no pair (`both_wrong`).
- recall right: the tool was not needed, but one right answer may be luck. `when_not_to_act`
  (chosen = the recall answer, rejected = the tool call) only when the model's own double check is
  sure (score >= 3, AFM's threshold for answering) and the task's closed-book rollouts say the model
  knows it: at least `min_rollouts` judged, pass rate at least `min_pass_rate`; otherwise no pair
  (`recall_unsure`, `too_few_rollouts`, `closed_book_unreliable`).
- a checker that could not decide: no pair (`check_undecided`).

Before any check (`unanswered`), a side that is no answer the instruction allows makes no pair. A web
agent's double check <= 2 leads to a new plan, not to the answer, so its side cannot end in one
(`recall_unsure`, right or wrong: the model itself would not have answered, it would have gone on
to act). A side the grammar refuses is `recall_grammar`. The code agent has no double check to stop
it, so its unsure wrong answer is still the side to reject: that is when it should have run code.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ...checks import CheckResult
from ...store import utcnow
from .config import PairsConfig
from .evidence import ClosedBook
from .layout import RecallAnswer
from .points import DecisionPoint

KINDS = ("when_to_act", "when_not_to_act")
UNDECIDED = "check_undecided"
SURE = 3  # AFM's double check: a score >= 3 leads to the answer, <= 2 to a new plan


@dataclass(frozen=True)
class Decision:
    kind: str | None  # one of KINDS, or None: no pair
    reason: str  # the rule that decided, a pair's or a left-out's
    detail: str  # one line: the verdict and the figures it rests on

    @property
    def rules_out(self) -> bool:
        """A verdict against a pair (a stored one goes); an undecided check says nothing either way."""
        return self.kind is None and self.reason != UNDECIDED


def unanswered(recall: RecallAnswer, variant: str) -> Decision | None:
    """No pair, and nothing to check, when the side is no answer the instruction allows; else None."""
    if variant != "code" and recall.score < SURE:
        return Decision(None, "recall_unsure", f"its own double check scored {recall.score}: the web agent's "
                        "instruction then re-plans, it does not answer")  # fmt: skip
    if not recall.verdict.ok:
        return Decision(None, "recall_grammar", f"the side breaks {recall.verdict.rule}: {recall.verdict.message}")
    return None


def decide(
    check: CheckResult, score: int, point: DecisionPoint, closed: ClosedBook | None, settings: PairsConfig
) -> Decision:
    """The rule for a checked recall answer whose own double check scored `score`."""
    verdict = f"recall {'right' if check.correct else 'wrong'} ({check.detail}; its own score {score})"
    if check.error:
        return Decision(None, UNDECIDED, f"the checker could not decide: {check.error}")
    if not check.correct:
        if point.correct is False:
            return Decision(None, "both_wrong", f"{verdict}; the trajectory's own answer was wrong too")
        return Decision("when_to_act", "recall_wrong", verdict)
    if score < SURE:
        return Decision(None, "recall_unsure", f"{verdict}; a score below {SURE} is not a confident direct answer")
    n, rate = (closed.n, closed.pass_rate) if closed else (0, None)
    if n < settings.min_rollouts:
        return Decision(
            None, "too_few_rollouts", f"{verdict}; {n} judged closed-book rollouts < {settings.min_rollouts}"
        )
    if rate < settings.min_pass_rate:
        figures = f"{closed.n_correct}/{n} = {rate:.2f} < {settings.min_pass_rate:g}"
        return Decision(None, "closed_book_unreliable", f"{verdict}; closed-book pass rate {figures}")
    figures = f"{closed.n_correct}/{n} = {rate:.2f} >= {settings.min_pass_rate:g}"
    return Decision("when_not_to_act", "closed_book_right", f"{verdict}; closed-book pass rate {figures}")


def pair_id(point: DecisionPoint, model: str) -> str:
    """One pair per trajectory and recall model: a rerun replaces it, another model adds its own."""
    return f"coa-recall:{model}:{point.trajectory_id}"


def pair_row(point: DecisionPoint, recall: RecallAnswer, check: CheckResult, checker: str, decision: Decision,
             closed: ClosedBook | None, model: str, request_hash: str) -> dict[str, Any]:  # fmt: skip
    acting, answering = [point.acting], [{"role": "assistant", "content": recall.text}]
    chosen, rejected = (acting, answering) if decision.kind == "when_to_act" else (answering, acting)
    evidence = {
        "rule": decision.reason,
        "detail": decision.detail,
        "recall": {"model": model, "answer": recall.answer, "score": recall.score, "request_hash": request_hash},
        "check": {"checker": checker, "correct": check.correct, "score": check.score, "detail": check.detail},
        "trajectory": {"correct": point.correct, "tool": point.tool},
        "closed_book": {**asdict(closed), "pass_rate": closed.pass_rate} if closed else None,
    }
    return {
        "pair_id": pair_id(point, model), "kind": decision.kind, "source": "coa", "task_id": point.task_id,
        "trajectory_id": point.trajectory_id, "prompt": json.dumps(point.prompt, ensure_ascii=False),
        "chosen": json.dumps(chosen, ensure_ascii=False), "rejected": json.dumps(rejected, ensure_ascii=False),
        "evidence": json.dumps(evidence, ensure_ascii=False), "created_at": utcnow(),
    }  # fmt: skip
