"""livecodebench test cases: read from Task.tests, and how an output is compared.

Two shapes come in `reward_model.ground_truth` (see factory.tasks):
- stdin style (AtCoder): {"stdin": [...], "expected_output": [...]}, one case a pair;
- functional style (LeetCode): {"functional": "result = Solution().f(args)\\nassert
  result == expected, ...", "func_name": "f"}: each assign + assert pair is one case,
  called through `run_function` with the literal arguments. A script of another
  shape is one `ScriptCase` (code_script.py): its asserts are split so that the
  comparisons run in the parent, or it is uncheckable.

Expected values never enter the sandbox: the stdin case's output and the call's
return value are compared here, in the parent, on plain text and JSON values.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .code_script import ScriptCase, UncheckableCase, script_case

FLOAT_TOLERANCE = Decimal("1e-9")


@dataclass(frozen=True)
class StdinCase:
    stdin: str
    expected: str


@dataclass(frozen=True)
class CallCase:
    method: str  # Solution().<method>(*args) == expected
    args: list
    expected: Any


Case = StdinCase | CallCase | ScriptCase | UncheckableCase


def cases_of(tests: dict | None) -> list[Case]:
    if not tests:
        return []
    if "functional" in tests:
        return functional_cases(tests["functional"])
    return [StdinCase(str(i), str(o)) for i, o in zip(tests.get("stdin", []), tests.get("expected_output", []))]


def functional_cases(script: str) -> list[Case]:
    try:
        body = ast.parse(script).body
        pairs = [body[i : i + 2] for i in range(0, len(body), 2)]
        return [call_case(*pair) for pair in pairs]
    except (SyntaxError, ValueError, TypeError):  # not the assign + assert shape
        return [script_case(script)]


def call_case(assign: ast.stmt, check: ast.stmt) -> CallCase:
    """`result = Solution().m(<literals>)` then `assert result == <literal>`, else ValueError."""
    call = assign.value if isinstance(assign, ast.Assign) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.keywords):
        raise ValueError("not a method call")
    owner = call.func.value
    if not (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "Solution"):
        raise ValueError("not a Solution().method(...) call")
    test = check.test if isinstance(check, ast.Assert) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        raise ValueError("not an `assert result == expected`")
    args = [ast.literal_eval(arg) for arg in call.args]
    return CallCase(call.func.attr, args, ast.literal_eval(test.comparators[0]))


def as_json(value: Any) -> Any:
    """What a value looks like after the sandbox's JSON trip (tuples become lists)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value


def outputs_match(actual: str, expected: str) -> bool:
    """livecodebench's rule: the same stripped lines; a line may differ in number
    spelling only ("1.50" for "1.5"), and, where the expected number has a fraction,
    by 1e-9 relative (AFM's evaluator allows 1e-9; Python prints 17 digits of a
    float where the judge wrote 20)."""
    got, want = output_lines(actual), output_lines(expected)
    return len(got) == len(want) and all(a == b or same_numbers(a, b) for a, b in zip(got, want))


def output_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def same_numbers(actual: str, expected: str) -> bool:
    got, want = actual.split(), expected.split()
    return len(got) == len(want) and all(same_number(a, b) for a, b in zip(got, want))


def same_number(actual: str, expected: str) -> bool:
    try:
        got, want = Decimal(actual), Decimal(expected)
        if got == want:
            return True
        # An integer answer is exact; only a written fraction allows rounding (and no NaN or inf).
        fractional = any(mark in expected.lower() for mark in ".e") and got.is_finite() and want.is_finite()
        return fractional and abs(got - want) <= FLOAT_TOLERANCE * max(Decimal(1), abs(want))
    except ArithmeticError:  # not numbers, or a signalling NaN
        return False
