"""Code seeds -> the same problem with a stated change and new hidden tests whose outputs the sandbox computes.

The writer (math_code_role.CodeVariantRole) keeps the seed's input and output
format, states what changes (larger limits, cases to handle), and gives a
reference solution plus new test inputs (literal, or made by its generator
program for inputs too large to write out). The expected outputs are what the
reference prints (stdin programs) or returns (LeetCode-style `Solution` methods)
in the sandbox, with the code checker's limits; they are trusted only when the
same reference passes the seed's own tests (factory.checks.CodeTests). The new
task's tests are the seed's plus the new cases, in the shape the checker reads
(factory/checks/code_cases.py).
"""

from __future__ import annotations

import json
from typing import Any

from ..checks import CODE_LIMITS, CodeTests
from ..checks.code_cases import CallCase, cases_of
from ..checks.code_tests import ENTRY, failed_run
from ..sandbox import SandboxLimits, arun_function
from ..tasks import Task
from .candidate import Candidate
from .math_code_role import CodeDraft, CodeVariantRole
from .variant_base import Expansion, new_candidate, outcome, sandboxed, unwritten

KIND = "code_tests"
SLOW_SHARE = 0.5  # of the checker's CPU limit: the most a new case may cost the reference
SLOW = "over half the time limit a solution gets"


async def code_variant(seed: Task, index: int, run: Expansion) -> Candidate:
    role, limits = CodeVariantRole(), run.code_limits or CODE_LIMITS
    result = await run.client.run(role.request(seed, index, run.per_seed, limits.allowed_imports))
    if not result.ok:
        return unwritten(seed, index, KIND, result)
    draft = role.parse(result.parsed)
    question = f"{seed.question.rstrip()}\n\n{draft.change}"
    provenance = {"request": result.request_hash, "change": draft.change, "solution": draft.solution,
                  "generator": draft.generator, "runs": []}  # fmt: skip
    candidate = new_candidate(seed, index, KIND, question, draft.hops, provenance)
    inputs, why = await new_inputs(draft, seed, run, limits, candidate)
    outputs, why = await reference_outputs(draft.solution, inputs, seed, run, limits) if inputs else (None, why)
    if not candidate.judge("computed", outputs is not None, why):
        return candidate
    if not candidate.judge("consistent", *await passes_seed(draft.solution, seed, limits)):
        return candidate
    candidate.task.tests = merged_tests(seed, inputs, outputs)
    candidate.judge("answer_not_in_question", *inputs_hidden(inputs, question))
    return candidate


def functional(seed: Task) -> bool:
    return bool(seed.tests and "functional" in seed.tests)


def input_key(text: str, seed: Task) -> str:
    """What makes two inputs the same test: the JSON arguments (functional), else the whitespace-split tokens."""
    if functional(seed):
        try:
            return json.dumps(json.loads(text))
        except ValueError:
            pass
    return " ".join(text.split())


def seed_keys(seed: Task) -> set[str]:
    if functional(seed):
        return {json.dumps(case.args) for case in cases_of(seed.tests) if isinstance(case, CallCase)}
    return {" ".join(str(text).split()) for text in (seed.tests or {}).get("stdin", [])}


async def new_inputs(draft: CodeDraft, seed: Task, run: Expansion, limits: SandboxLimits, candidate: Candidate):
    """The written inputs, then the generated ones; repeats of the seed's tests (or of each other) left out."""
    texts = list(draft.inputs)
    for k in range(1, draft.generated + 1):
        verdict = await sandboxed(run, draft.generator, f"{k}\n", limits)
        candidate.provenance["runs"].append(outcome(verdict, f"{k}\n"))
        if not verdict.ok or not verdict.stdout.strip() or verdict.stdout_truncated:
            return None, f"the generator with k={k}: {failed_run(verdict) if not verdict.ok else 'no usable input'}"
        texts.append(verdict.stdout)
    seen, kept = seed_keys(seed), []
    for text in texts:
        if input_key(text, seed) not in seen:
            seen.add(input_key(text, seed))
            kept.append(text)
    candidate.provenance["repeated_inputs"] = len(texts) - len(kept)
    return (kept, f"{len(kept)} new inputs") if kept else (None, "every new input repeats a test the seed has")


async def reference_outputs(solution: str, inputs: list[str], seed: Task, run: Expansion, limits: SandboxLimits):
    """The reference's output for every input, or the first input it failed on."""
    if functional(seed):
        return await returned_values(solution, inputs, seed, run, limits)
    outputs = []
    for number, text in enumerate(inputs, 1):
        verdict = await sandboxed(run, solution, text, limits)
        if not verdict.ok or not verdict.stdout.strip() or verdict.stdout_truncated:
            what = failed_run(verdict) if not verdict.ok else "printed nothing usable"
            return None, f"the reference solution on new input {number}: {what}"
        if too_slow(verdict.duration_s, limits):
            return None, f"the reference solution took {verdict.duration_s:.1f}s on new input {number}: {SLOW}"
        outputs.append(verdict.stdout)
    return outputs, f"the reference solution answered {len(outputs)} new inputs"


async def returned_values(solution: str, inputs: list[str], seed: Task, run: Expansion, limits: SandboxLimits):
    calls = [case for case in cases_of(seed.tests) if isinstance(case, CallCase)]
    if not calls or len(calls) != len(cases_of(seed.tests)):
        return None, "the seed's tests are not Solution().method(...) calls: no case can be added to them"
    arguments = [arguments_of(text) for text in inputs]
    bad = next((number for number, args in enumerate(arguments, 1) if args is None), None)
    if bad:
        return None, f"new input {bad} is not a JSON array of arguments"
    source = f"{solution}\n\ndef {ENTRY}(*args):\n    return Solution().{calls[0].method}(*args)\n"
    async with run.gate:
        verdict = await arun_function(source, ENTRY, arguments, limits, call_timeout_s=limits.cpu_s)
    bad = next((call for call in verdict.calls if not call.ok), None)
    if bad is not None or not verdict.ok or len(verdict.calls) != len(inputs):
        where = f"new input {bad.index + 1}" if bad is not None else "the new inputs"
        return None, f"the reference solution on {where}: {failed_run(bad or verdict)}"
    slow = next((call for call in verdict.calls if too_slow(call.duration_s, limits)), None)
    if slow is not None:
        return None, f"the reference solution took {slow.duration_s:.1f}s on new input {slow.index + 1}: {SLOW}"
    return [call.value for call in verdict.calls], f"the reference solution answered {len(inputs)} new inputs"


def too_slow(seconds: float, limits: SandboxLimits) -> bool:
    """A case the reference itself barely finishes would fail a correct answer on a slower machine."""
    return seconds > limits.cpu_s * SLOW_SHARE


def arguments_of(text: str) -> list | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


async def passes_seed(solution: str, seed: Task, limits: SandboxLimits) -> tuple[bool, str]:
    if not seed.tests:
        return False, "the seed has no tests for the reference solution to pass"
    verdict = await CodeTests(limits).acheck(f"```py\n{solution}\n```", seed)
    if verdict.error:
        return False, f"the seed's tests could not judge it: {verdict.error}"
    if not verdict.correct:
        return False, f"the reference solution fails the seed's tests: {verdict.detail}"
    return True, f"the reference solution passes the seed's tests ({verdict.detail})"


def merged_tests(seed: Task, inputs: list[str], outputs: list[Any]) -> dict[str, Any]:
    """The seed's tests and the new cases, in the shape the code checker reads."""
    tests = dict(seed.tests or {})
    if functional(seed):
        method = next(case.method for case in cases_of(seed.tests) if isinstance(case, CallCase))
        added = "".join(
            f"result = Solution().{method}({', '.join(map(repr, arguments_of(text)))})\nassert result == {value!r}\n"
            for text, value in zip(inputs, outputs)
        )
        tests["functional"] = f"{tests['functional'].rstrip()}\n{added}"
        return tests
    tests["stdin"] = [*tests.get("stdin", []), *inputs]
    tests["expected_output"] = [*tests.get("expected_output", []), *outputs]
    return tests


def inputs_hidden(inputs: list[str], question: str) -> tuple[bool, str]:
    """A hidden test is hidden: none of the new inputs is written out in the statement (short ones match by chance)."""
    statement = " ".join(question.split())
    for number, text in enumerate(inputs, 1):
        squeezed = " ".join(text.split())
        if len(squeezed) >= 8 and squeezed in statement:
            return False, f"new input {number} is written out in the statement"
    return True, "no new input is written out in the statement"
