"""Code answers: run the reply's program against the task's tests, in factory.sandbox.

    result = CodeTests().check(reply_with_a_python_block, livecodebench_task)
    result.score   # the fraction of cases passed; correct when all pass

Each case is its own sandboxed run (a hung case costs only itself), with a bound
on how many run at once per event loop.

What decides is computed here, in the parent, never in the sandbox: the program's
stdout against the expected output, each returned or probed value against the
expected one (plain JSON values, so no `__eq__` of the program's runs). The
expected values are never sent to the child, and the sandbox's own verdict
(exit status, timeouts, a tampered result channel, an exit before the calls
returned) must be clean as well. tests/test_checks_hostile.py tries the tricks.

Where the kernel lacks a layer that contains the program (Landlock, seccomp;
factory/sandbox/containment.py), nothing runs and the result is a recorded
error naming it, never a score (tests/test_sandbox_containment.py).
"""

from __future__ import annotations

import asyncio
import os
import weakref

from ..sandbox import (
    CODE_TASK_IMPORTS,
    CONTEST_PRELUDE,
    SandboxLimits,
    SandboxResult,
    arun_function,
    arun_program,
    sandbox_refusal,
)
from ..tasks import Task
from .base import Checker, CheckResult, failure
from .code_cases import CallCase, Case, StdinCase, as_json, cases_of, outputs_match
from .code_script import PROBE_FUNCTION, ScriptCase, UncheckableCase
from .extract import python_code

# livecodebench gives 6 s a case. The code-task profile, with what livecodebench and
# AFM import before every solution (`exit` included: the child starts without `site`)
# and AFM's recursion limit.
CODE_LIMITS = SandboxLimits(
    cpu_s=6, wall_s=12, memory_mb=1024, allowed_imports=CODE_TASK_IMPORTS, preloaded_modules=CONTEST_PRELUDE,
    recursion_limit=600_000,
)  # fmt: skip
ISOLATION = "error/isolation"  # a case the sandbox would not run here: the machine's fault, not the code's
ENTRY = "run_solution"  # the wrapper run_function calls: Solution().<method>(*args)


class CodeTests(Checker):
    name = "code"

    def __init__(self, limits: SandboxLimits | None = None, max_parallel: int | None = None):
        self.limits = limits or CODE_LIMITS
        self.max_parallel = max_parallel or min(8, os.cpu_count() or 1)
        self._gates: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> semaphore

    async def acheck(self, prediction: str, task: Task) -> CheckResult:
        cases = cases_of(task.tests)
        if not cases:
            return failure(f"task {task.id} has no code tests")
        uncheckable = next((case for case in cases if isinstance(case, UncheckableCase)), None)
        if uncheckable:
            return failure(f"task {task.id}: {uncheckable.reason}")
        code = python_code(prediction)
        if not code.strip():
            return CheckResult(correct=False, score=0.0, detail="no code in the reply")
        refused = sandbox_refusal()
        if refused:
            return failure(f"task {task.id} not judged: {refused}")
        outcomes = await asyncio.gather(*(self.run_case(code, case) for case in cases))
        isolation = next((o for o in outcomes if o and o.startswith(ISOLATION)), None)
        return failure(f"task {task.id} not judged: {isolation}") if isolation else summary(outcomes)

    async def run_case(self, code: str, case: Case) -> str | None:
        """None when the case passes, else a short reason."""
        async with self.gate():
            if isinstance(case, StdinCase):
                return stdin_outcome(await arun_program(code, case.stdin, self.limits), case)
            if isinstance(case, CallCase):
                source = f"{code}\n\ndef {ENTRY}(*args):\n    return Solution().{case.method}(*args)\n"
                verdict = await arun_function(source, ENTRY, [case.args], self.limits, call_timeout_s=self.limits.cpu_s)
                return call_outcome(verdict, case)
            source = f"{code}\n\n{case.source}\n"
            verdict = await arun_function(source, PROBE_FUNCTION, [[]], self.limits, call_timeout_s=self.limits.cpu_s)
            return script_outcome(verdict, case)

    def gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # a semaphore belongs to one loop; sync check() runs its own
        if loop not in self._gates:
            self._gates[loop] = asyncio.Semaphore(self.max_parallel)
        return self._gates[loop]


def stdin_outcome(verdict: SandboxResult, case: StdinCase) -> str | None:
    if not verdict.ok:
        return failed_run(verdict)
    if outputs_match(verdict.stdout, case.expected):
        return None
    return f"wrong output: expected {clip(case.expected)!r}, got {clip(verdict.stdout)!r}"


def call_outcome(verdict: SandboxResult, case: CallCase) -> str | None:
    call = verdict.calls[0] if verdict.calls else None
    if not verdict.ok or call is None or not call.ok:
        return failed_run(call or verdict)
    if call.value == as_json(case.expected):
        return None
    return f"wrong value: expected {clip(repr(case.expected))}, got {clip(repr(call.value))}"


def script_outcome(verdict: SandboxResult, case: ScriptCase) -> str | None:
    call = verdict.calls[0] if verdict.calls else None
    if not verdict.ok or call is None or not call.ok:
        return failed_run(call or verdict)
    values = call.value if isinstance(call.value, list) else None
    if values is None or len(values) != len(case.expectations):
        return f"the test script reported {clip(repr(call.value))}, not one value per assert"
    for value, expectation in zip(values, case.expectations):
        if not expectation.holds(value):
            return f"assert failed: {clip(expectation.text)} (got {clip(repr(value))})"
    return None


def failed_run(verdict) -> str:
    """'timeout/cpu', 'error/exception: line 3: ...', 'rejected/import: ...'."""
    what = f"{verdict.status}/{verdict.reason}" if verdict.reason else verdict.status
    return f"{what}: {clip(verdict.error, 120)}" if verdict.error else what


def clip(text: str | None, limit: int = 60) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def summary(outcomes: list[str | None]) -> CheckResult:
    passed = sum(outcome is None for outcome in outcomes)
    detail = f"{passed}/{len(outcomes)} passed"
    first = next(((i, o) for i, o in enumerate(outcomes, 1) if o is not None), None)
    if first:
        detail += f"; case {first[0]}: {first[1]}"
    return CheckResult(correct=passed == len(outcomes), score=passed / len(outcomes), detail=detail)
