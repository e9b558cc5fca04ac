"""Math and code seeds -> harder variants whose ground truth is computed in the sandbox.

    candidates = await expand_math_code(seeds, client, per_seed=2)
    [c.task for c in candidates if c.kept]   # math: answers = what the program printed; code: tests + new cases

A capable model settles an easy math or code task in one or two tool calls;
AFM-style trajectories need tasks that take computation to check (a sweep over a
range, "verify for every n up to N", hidden tests that defeat a naive program).
The writer (math_code_role.py) proposes the variant and a program; the answer is
never its word. Gates, each with its reason (`Candidate.judge`), in order:

- computed: the program ran in factory.sandbox (SandboxLimits: CPU, memory, no
  files, no network) and printed exactly one plain value (math), or the
  reference solution answered every new test input (code).
- consistent: math: the same program, given the seed's parameters instead of the
  variant's, prints the seed's known answer (math-verify equivalence), and a
  second run of the variant prints the same value (no unseeded randomness). A
  rerun alone shows only determinism; the seed's answer shows the program's core
  is right. Code: the reference solution passes the seed's own tests
  (factory.checks.CodeTests) before its outputs on new inputs are trusted.
- answer_not_in_question: math: the computed value (two or more digits) is not
  a number written in the question; code: no new hidden input is written out in
  the statement.

A failed or unreadable LLM reply is a candidate dropped by the gate `written`.
"""

from __future__ import annotations

import asyncio
import re
from fractions import Fraction
from typing import Any

from ..checks import MathAnswer
from ..checks.code_tests import failed_run
from ..errors import FactoryError
from ..llm import LLMClient, Result
from ..sandbox import SandboxLimits, SandboxResult, sandbox_refusal
from ..tasks import Task
from .candidate import Candidate
from .code_variants import code_variant
from .math_code_role import MathDraft, MathVariantRole
from .variant_base import Expansion, new_candidate, outcome, sandboxed, unwritten

# A sweep to 10^6 in plain Python takes seconds; the default profile: pure computation, no I/O.
MATH_LIMITS = SandboxLimits(cpu_s=10, wall_s=20, memory_mb=1024)
NUMBER = r"-?\d+(?:\.\d+)?(?:/\d+)?"
PLAIN_VALUE = re.compile(rf"{NUMBER}|\(\s*{NUMBER}(?:\s*,\s*{NUMBER})+\s*\)")
MAX_ANSWER_CHARS = 80


async def expand_math_code(
    seeds: list[Task], client: LLMClient, per_seed: int = 1, *, math_limits: SandboxLimits | None = None,
    code_limits: SandboxLimits | None = None, checker: MathAnswer | None = None, max_parallel: int = 8,
) -> list[Candidate]:  # fmt: skip
    """`per_seed` variants of each math or code seed, every one a Candidate with its gates judged."""
    refused = sandbox_refusal()
    if refused:  # no ground truth can be computed here: ask the model nothing
        raise FactoryError(f"math/code variants need the sandbox, which will not run here: {refused}")
    other = [seed.id for seed in seeds if seed.domain not in ("math", "code")]
    if other:
        raise FactoryError(f"math/code variants take math and code seeds; {other[0]} is not one")
    own = checker is None and any(seed.domain == "math" for seed in seeds)
    checker = MathAnswer() if own else checker
    run = Expansion(client, per_seed, math_limits or MATH_LIMITS, code_limits, checker, asyncio.Semaphore(max_parallel))
    try:
        jobs = [variant(seed, index, run) for seed in seeds for index in range(per_seed)]
        return list(await asyncio.gather(*jobs))
    finally:
        if own:
            checker.close()


async def variant(seed: Task, index: int, run: Expansion) -> Candidate:
    if seed.domain == "math":
        return await math_variant(seed, index, run)
    return await code_variant(seed, index, run)


# -- math ---------------------------------------------------------------------


async def math_variant(seed: Task, index: int, run: Expansion) -> Candidate:
    role = MathVariantRole()
    result = await run.client.run(role.request(seed, index, run.per_seed, run.math_limits.allowed_imports))
    if not result.ok:
        return unwritten(seed, index, "math_sweep", result)
    draft = role.parse(result.parsed)
    candidate = new_candidate(seed, index, draft.kind, draft.question, draft.hops, math_provenance(draft, result))
    stdins = (draft.variant_input, draft.variant_input, draft.seed_input)
    verdicts = await asyncio.gather(*(sandboxed(run, draft.program, stdin, run.math_limits) for stdin in stdins))
    candidate.provenance["runs"] = [outcome(verdict, stdin) for verdict, stdin in zip(verdicts, stdins)]
    answer, why = printed_answer(verdicts[0])
    if not candidate.judge("computed", answer is not None, why):
        return candidate
    candidate.task.answers = [answer]
    candidate.provenance["claimed_matches"] = same_value(draft.claimed_answer, answer)
    consistent, why = await math_consistency(answer, verdicts[1], verdicts[2], seed, run.checker)
    if candidate.judge("consistent", consistent, why):
        candidate.judge("answer_not_in_question", *answer_absent(answer, draft.question))
    return candidate


def math_provenance(draft: MathDraft, result: Result) -> dict[str, Any]:
    return {"request": result.request_hash, "program": draft.program, "variant_input": draft.variant_input,
            "seed_input": draft.seed_input, "claimed_answer": draft.claimed_answer}  # fmt: skip


def printed_answer(verdict: SandboxResult) -> tuple[str | None, str]:
    """(the one plain value the program printed, why) or (None, why not)."""
    if not verdict.ok:
        return None, f"the program failed: {failed_run(verdict)}"
    lines = [line.strip() for line in verdict.stdout.splitlines() if line.strip()]
    if not lines:
        return None, "the program printed nothing"
    if len(lines) > 1 or verdict.stdout_truncated:
        return None, f"the program printed {len(lines)} lines, not one answer"
    value = lines[0]
    if len(value) > MAX_ANSWER_CHARS or not PLAIN_VALUE.fullmatch(value):
        return None, f"the program printed {value[:40]!r}, not a plain number, fraction or tuple"
    return value, f"the program printed {value}"


async def math_consistency(
    answer: str, rerun: SandboxResult, seed_run: SandboxResult, seed: Task, checker: MathAnswer
) -> tuple[bool, str]:
    again, why = printed_answer(rerun)
    if again != answer:
        return False, f"a second run disagrees: {again or why}"
    if not seed.answers:
        return False, "the seed has no reference answer to reproduce"
    reproduced, why = printed_answer(seed_run)
    if reproduced is None:
        return False, f"with the seed's parameters: {why}"
    verdict = await checker.acheck(f"\\boxed{{{reproduced}}}", seed)
    if not verdict.correct:
        return False, f"with the seed's parameters it printed {reproduced}, not the seed's answer {seed.answers[0]}"
    return True, f"reproduced the seed's answer ({reproduced}); two runs agree"


def same_value(claimed: str, computed: str) -> bool:
    """The writer's guess against the computed answer: equal as numbers, else as text without spaces."""
    try:
        return Fraction(claimed.strip()) == Fraction(computed)
    except (ValueError, ZeroDivisionError):
        return "".join(claimed.split()).strip("()") == "".join(computed.split()).strip("()")


def answer_absent(answer: str, question: str) -> tuple[bool, str]:
    """A one-digit answer is not checked: small numbers appear in most questions by chance."""
    if sum(char.isdigit() for char in answer) < 2:
        return True, "a one-digit answer is not checked"
    written = "".join(question.split()).replace("{,}", "")
    grouped = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", written)  # 1,000 is the number 1000
    numbers = {number.lstrip("-") for number in re.findall(rf"(?<![\d.]){NUMBER}(?![\d.])", grouped)}
    squeezed = "".join(answer.split())
    if squeezed.lstrip("-") in numbers or (squeezed.startswith("(") and squeezed in written):
        return False, f"the answer {answer} is written in the question"
    return True, "the answer is not written in the question"
