"""Test scripts of asserts, checked where the tested code cannot reach.

A script such as

    s = Solution()
    assert s.f([1, 2]) == [2, 1]
    assert not s.g('x')

cannot run whole inside the sandbox: the program under test shares that process,
so it could exit before the asserts, forge the run's result, or read the
expected values out of the script. Instead, each top-level `assert` is split in
two: the expression under test is evaluated in the sandbox (its value returned
like any call's), and what it is compared with stays in the parent, which does
the comparison on plain JSON values. The sandbox never sees an expected value.

Only what can be split that way is accepted: top-level asserts of the form
`<expr> <op> <literal>` (either side literal; ops ==, !=, <, <=, >, >=, in,
not in, and `is`/`is not` with True, False or None), `<expr>` and `not <expr>`.
Any other assert makes the script uncheckable, an undecided check rather than a
guess.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any

PROBE_FUNCTION = "probe_script"  # what run_function calls: runs the script, returns the probed values
PROBES = "probed_values"  # the list the rewritten asserts append to (a local of PROBE_FUNCTION)

COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}  # fmt: skip
FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
SINGLETONS = (True, False, None)  # the only literals `is` can be checked against after a JSON trip


@dataclass(frozen=True)
class Expectation:
    op: str  # "truthy", "falsy" or an ast comparison class name ("Eq", "In", ...)
    value: Any = None
    text: str = ""  # the assert as written, for the detail line

    def holds(self, actual: Any) -> bool:
        if self.op in ("truthy", "falsy"):
            return bool(actual) == (self.op == "truthy")
        try:
            return bool(COMPARE[getattr(ast, self.op)](actual, self.value))
        except TypeError:  # "<" between a list and an int: the value is wrong, not the harness
            return False


@dataclass(frozen=True)
class ScriptCase:
    """`source` defines PROBE_FUNCTION; its i-th returned value must meet `expectations[i]`."""

    source: str
    expectations: tuple[Expectation, ...]


@dataclass(frozen=True)
class UncheckableCase:
    reason: str


def script_case(script: str) -> ScriptCase | UncheckableCase:
    try:
        body = ast.parse(script).body
    except (SyntaxError, ValueError) as exc:
        return UncheckableCase(f"the test script does not parse: {exc}")
    nested = [node for stmt in body if not isinstance(stmt, ast.Assert) for node in ast.walk(stmt)
              if isinstance(node, ast.Assert)]  # fmt: skip
    if nested:
        where = f"line {nested[0].lineno}"
        return UncheckableCase(f"{where}: an assert inside a block cannot be checked outside the program")
    statements, expectations = [], []
    for stmt in body:
        if not isinstance(stmt, ast.Assert):
            statements.append(stmt)
            continue
        split = split_assert(stmt.test)
        if isinstance(split, str):
            return UncheckableCase(f"line {stmt.lineno}: {split}")
        probed, expectation = split
        expectations.append(Expectation(expectation.op, expectation.value, ast.unparse(stmt.test)[:80]))
        statements.append(probe(probed, stmt))
    if not expectations:
        return UncheckableCase("the test script has no assert to check")
    return ScriptCase(probe_function(statements), tuple(expectations))


def split_assert(test: ast.expr) -> tuple[ast.expr, Expectation] | str:
    """(the expression to evaluate in the sandbox, what the parent expects of it), or why not."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand, Expectation("falsy")
    if not isinstance(test, ast.Compare):
        return test, Expectation("truthy")
    if len(test.ops) != 1:
        return "a chained comparison cannot be checked outside the program"
    op, left, right = type(test.ops[0]), test.left, test.comparators[0]
    expected = literal(right)
    if expected is NOT_LITERAL and op in FLIPPED:
        op, left, right, expected = FLIPPED[op], right, left, literal(left)
    if expected is NOT_LITERAL:
        return "only a comparison with a literal value can be checked outside the program"
    if op in (ast.Is, ast.IsNot) and not any(expected is singleton for singleton in SINGLETONS):
        return "`is` can be checked only against True, False or None"
    return left, Expectation(op.__name__, as_plain(expected))


NOT_LITERAL = object()


def literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def as_plain(value: Any) -> Any:
    """The expected value as the probed one comes back: JSON has lists, not tuples or sets."""
    if isinstance(value, (tuple, list)):
        return [as_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): as_plain(item) for key, item in value.items()}
    return value


def probe(expression: ast.expr, where: ast.stmt) -> ast.stmt:
    call = ast.Call(ast.Attribute(ast.Name(PROBES, ast.Load()), "append", ast.Load()), [expression], [])
    return ast.copy_location(ast.Expr(call), where)


def probe_function(statements: list[ast.stmt]) -> str:
    start = ast.parse(f"{PROBES} = []").body
    end = ast.parse(f"return {PROBES}").body
    arguments = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    function = ast.FunctionDef(name=PROBE_FUNCTION, args=arguments, body=start + statements + end, decorator_list=[])
    return ast.unparse(ast.fix_missing_locations(ast.Module([function], [])))
