"""Short-answer QA checks, SQuAD style: exact match and token F1 over answer aliases."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from ..tasks import Task
from .base import Checker, CheckResult, failure
from .extract import final_answer

ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, squeeze whitespace (the SQuAD rule;
    punctuation here is every Unicode P* character, so curly quotes go too)."""
    text = "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith("P"))
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, answers: list[str]) -> bool:
    guess = normalize_answer(prediction)
    return any(guess == normalize_answer(answer) for answer in answers)


def token_f1(prediction: str, answer: str) -> float:
    guess, truth = normalize_answer(prediction).split(), normalize_answer(answer).split()
    if not guess or not truth:
        return float(guess == truth)  # both empty is a match; one empty is not
    common = sum((Counter(guess) & Counter(truth)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(guess), common / len(truth)
    return 2 * precision * recall / (precision + recall)


def best_f1(prediction: str, answers: list[str]) -> float:
    return max((token_f1(prediction, answer) for answer in answers), default=0.0)


def no_answers(task: Task) -> CheckResult | None:
    return None if task.answers else failure(f"task {task.id} has no reference answers")


class ExactMatch(Checker):
    name = "exact_match"

    def check(self, prediction: str, task: Task) -> CheckResult:
        guess = final_answer(prediction)
        hit = exact_match(guess, task.answers)
        return no_answers(task) or CheckResult(correct=hit, score=float(hit), detail=f"em={int(hit)} {guess[:80]!r}")


class F1(Checker):
    """Token F1, best over aliases; `correct` when it reaches `threshold`."""

    name = "f1"

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold

    def check(self, prediction: str, task: Task) -> CheckResult:
        guess = final_answer(prediction)
        score = best_f1(guess, task.answers)
        return no_answers(task) or CheckResult(correct=score >= self.threshold, score=score, detail=f"f1={score:.2f}")


class QA(Checker):
    """The QA default: exact match decides `correct`, F1 is the score, both in the detail."""

    name = "qa"

    def check(self, prediction: str, task: Task) -> CheckResult:
        guess = final_answer(prediction)
        hit, score = exact_match(guess, task.answers), best_f1(guess, task.answers)
        return no_answers(task) or CheckResult(
            correct=hit, score=1.0 if hit else score, detail=f"em={int(hit)} f1={score:.2f} {guess[:80]!r}"
        )
