"""Which pair one judged recall answer makes, if any (docs/when_to_act.md), and the row it is stored as.

- recall wrong, the trajectory right (or unjudged): `when_to_act`; chosen = the turn that calls the
  tool, rejected = the recall answer. Recall wrong and the trajectory wrong too: no evidence that
  acting helps here, no pair (`both_wrong`).
- recall right: the tool was not needed, but one right answer may be luck. `when_not_to_act`
  (chosen = the recall answer, rejected = the tool call) only when the task's closed-book rollouts
  say the model knows it: at least `min_rollouts` judged, pass rate at least `min_pass_rate`;
  otherwise no pair (`too_few_rollouts`, `closed_book_unreliable`).
- a checker that could not decide: no pair (`check_undecided`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from ...checks import CheckResult
from ...store import utcnow
from .config import PairsConfig
from .evidence import ClosedBook
from .points import DecisionPoint
from .recall import RecallAnswer

KINDS = ("when_to_act", "when_not_to_act")
UNDECIDED = "check_undecided"


@dataclass(frozen=True)
class Decision:
    kind: str | None  # one of KINDS, or None: no pair
    reason: str  # the rule that decided, a pair's or a left-out's
    detail: str  # one line: the verdict and the figures it rests on

    @property
    def rules_out(self) -> bool:
        """A verdict against a pair (a stored one goes); an undecided check says nothing either way."""
        return self.kind is None and self.reason != UNDECIDED


def decide(check: CheckResult, point: DecisionPoint, closed: ClosedBook | None, settings: PairsConfig) -> Decision:
    verdict = f"recall {'right' if check.correct else 'wrong'} ({check.detail})"
    if check.error:
        return Decision(None, UNDECIDED, f"the checker could not decide: {check.error}")
    if not check.correct:
        if point.correct is False:
            return Decision(None, "both_wrong", f"{verdict}; the trajectory's own answer was wrong too")
        return Decision("when_to_act", "recall_wrong", verdict)
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
        "rule": decision.reason, "detail": decision.detail,
        "recall": {"model": model, "answer": recall.answer, "request_hash": request_hash},
        "check": {"checker": checker, "correct": check.correct, "score": check.score, "detail": check.detail},
        "trajectory": {"correct": point.correct, "tool": point.tool},
        "closed_book": {**asdict(closed), "pass_rate": closed.pass_rate} if closed else None,
    }  # fmt: skip
    return {
        "pair_id": pair_id(point, model), "kind": decision.kind, "source": "coa", "task_id": point.task_id,
        "trajectory_id": point.trajectory_id, "prompt": json.dumps(point.prompt, ensure_ascii=False),
        "chosen": json.dumps(chosen, ensure_ascii=False), "rejected": json.dumps(rejected, ensure_ascii=False),
        "evidence": json.dumps(evidence, ensure_ascii=False), "created_at": utcnow(),
    }  # fmt: skip
