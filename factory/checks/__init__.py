"""factory.checks: is a reply correct for a task?

Each checker has a `name`, `acheck(prediction, task) -> CheckResult` (async,
for batches) and, except llm_judge, a sync `check`. A CheckResult says
`correct`, a `score` in [0, 1], a one-line `detail`, and `error` when the
checker could not decide.

    exact_match, f1, qa   SQuAD-normalised match over answer aliases (qa: EM decides, F1 scores)
    math                  math-verify equivalence of the last \\boxed{} (worker processes)
    code                  the answer's program (AFM's rule: the last <answer> span's ```py blocks) against
                          the task's tests in factory.sandbox; every comparison runs in the parent, with
                          expected values the sandbox never sees (tests/test_checks_hostile.py)
    llm_judge             an LLM's structured verdict (prompts/checks/judge_*.md)
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".base": ("Checker", "CheckError", "CheckResult"),
        ".code_tests": ("CODE_LIMITS", "CodeTests"),
        ".extract": ("final_answer", "last_boxed", "python_code"),
        ".judge": ("JudgeRole", "JudgeVerdict", "LLMJudge"),
        ".math_answer": ("MathAnswer",),
        ".registry": ("CHECKERS", "default_checker", "get_checker", "register_checker"),
        ".text": ("F1", "QA", "ExactMatch", "best_f1", "exact_match", "normalize_answer", "token_f1"),
    },
)

__all__ = [
    "CHECKERS", "CODE_LIMITS", "CheckError", "CheckResult", "Checker", "CodeTests", "ExactMatch", "F1",
    "JudgeRole", "JudgeVerdict", "LLMJudge", "MathAnswer", "QA", "best_f1", "default_checker", "exact_match",
    "final_answer", "get_checker", "last_boxed", "normalize_answer", "python_code", "register_checker", "token_f1",
]  # fmt: skip
