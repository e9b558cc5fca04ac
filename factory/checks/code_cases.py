"""livecodebench test cases: read from Task.tests, and how an output is compared.

Two shapes come in `reward_model.ground_truth` (see factory.coa.tasks):
- stdin style (AtCoder): {"stdin": [...], "expected_output": [...]}, one case a pair;
- functional style (LeetCode): {"functional": "result = Solution().f(args)\\nassert
  result == expected, ...", "func_name": "f"}: each assign + assert pair is one case,
  called through `run_function` with the literal arguments. A script whose calls
  are not literals is run whole after the code, as one case that passes when no
  assert fails.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any


@dataclass(frozen=True)
class StdinCase:
    stdin: str
    expected: str


@dataclass(frozen=True)
class CallCase:
    method: str  # Solution().<method>(*args) == expected
    args: list
    expected: Any


@dataclass(frozen=True)
class ScriptCase:
    script: str  # assert statements run after the solution


Case = StdinCase | CallCase | ScriptCase


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
    except (SyntaxError, ValueError, TypeError):  # not the assign + assert shape: run it as it is
        return [ScriptCase(script)]


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
    spelling only ("1.50" for "1.5")."""
    got, want = output_lines(actual), output_lines(expected)
    return len(got) == len(want) and all(a == b or same_numbers(a, b) for a, b in zip(got, want))


def output_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def same_numbers(actual: str, expected: str) -> bool:
    try:
        return [Decimal(x) for x in actual.split()] == [Decimal(x) for x in expected.split()]
    except InvalidOperation:
        return False
