"""Checkers by name, and the default one for a task's domain.

checker = get_checker("math")                 # shared instance (its worker processes are reused)
checker = get_checker("code", max_parallel=2) # a fresh one with options
judge = get_checker("llm_judge", llm=client)
result = await default_checker(task).acheck(reply, task)
"""

from __future__ import annotations

from functools import lru_cache

from ..tasks import Task
from .base import Checker, CheckError
from .code_tests import CodeTests
from .judge import LLMJudge
from .math_answer import MathAnswer
from .text import F1, QA, ExactMatch

CHECKERS: dict[str, type[Checker]] = {
    "exact_match": ExactMatch, "f1": F1, "qa": QA, "math": MathAnswer, "code": CodeTests, "llm_judge": LLMJudge,
}  # fmt: skip
DOMAIN_DEFAULTS = {"qa": "qa", "math": "math", "code": "code"}  # qa: exact match decides, F1 is reported


def register_checker(name: str, checker: type[Checker]) -> None:
    """Make a checker class available to get_checker (and to configs naming it)."""
    CHECKERS[name] = checker
    shared_checker.cache_clear()


def get_checker(name: str, **options: object) -> Checker:
    if name not in CHECKERS:
        raise CheckError(f"unknown checker '{name}' (known: {', '.join(sorted(CHECKERS))})")
    if name == "llm_judge" and "llm" not in options:
        raise CheckError("the llm_judge checker needs an LLM client: get_checker('llm_judge', llm=client)")
    if not options:
        return shared_checker(name)
    try:
        return CHECKERS[name](**options)
    except TypeError as exc:
        raise CheckError(f"checker '{name}': {exc}") from None


@lru_cache(maxsize=None)
def shared_checker(name: str) -> Checker:
    return CHECKERS[name]()


def default_checker(task: Task) -> Checker:
    return get_checker(DOMAIN_DEFAULTS[task.domain])
