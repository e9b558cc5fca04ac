"""The first wall: read the code with `ast` and refuse what it must not do.

It is deliberately blunt — a rule about names rather than a model of Python —
because generated code that needs `__subclasses__` or `eval` to check a game
state is wrong anyway, and a refusal with a line number is a useful answer to
give back to the model. It is not the only wall: the child's runtime guards and
the kernel limits assume this check was bypassed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable

# Dunders that carry no capability: `if __name__ == "__main__":`, `super().__init__()`.
SAFE_DUNDERS = frozenset({"__name__", "__main__", "__init__"})

# Builtins that run or reach code by name; referring to one at all is refused,
# not just calling it, since `e = eval; e(s)` is the same thing.
FORBIDDEN_BUILTINS = frozenset({"eval", "exec", "compile", "globals", "locals", "vars", "breakpoint", "help"})
NAME_BASED_ACCESS = frozenset({"getattr", "setattr", "delattr", "hasattr"})

# Frame, code and traceback attributes lead from any generator or exception to
# the globals of the code that called it (the runner) without a single dunder.
INTROSPECTION_ATTRS = frozenset({
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace",
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
    "tb_frame", "tb_next", "co_code", "co_consts",
})  # fmt: skip

DUNDER_WORD = re.compile(r"__\w+__")


@dataclass(frozen=True)
class StaticIssue:
    status: str  # "rejected", or "error" for code that does not parse
    reason: str  # import | dunder | builtin | attribute | syntax
    line: int | None
    message: str

    @property
    def text(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_source(source: str, allowed_imports: Iterable[str], allow_open: bool = False) -> StaticIssue | None:
    """The first problem in `source`, or None when it may run."""
    try:
        tree = ast.parse(source, filename="<sandbox>")
    except SyntaxError as exc:
        return StaticIssue("error", "syntax", exc.lineno, f"SyntaxError: {exc.msg}")
    except (ValueError, MemoryError, RecursionError) as exc:  # NUL bytes, absurd nesting
        return StaticIssue("error", "syntax", None, f"{type(exc).__name__}: {exc}")
    rules = Rules(
        allowed=frozenset(allowed_imports),
        forbidden=FORBIDDEN_BUILTINS if allow_open else FORBIDDEN_BUILTINS | {"open"},
        direct_calls=direct_call_names(tree),
    )
    issues = []
    for node in ast.walk(tree):
        problem = node_problem(node, rules)
        if problem:
            issues.append(StaticIssue("rejected", problem[0], getattr(node, "lineno", None), problem[1]))
    # ast.walk is breadth-first; the earliest line is the one a reader looks at first.
    return min(issues, key=lambda issue: issue.line or 0, default=None)


@dataclass(frozen=True)
class Rules:
    allowed: frozenset[str]
    forbidden: frozenset[str]
    direct_calls: frozenset[int]  # id() of the Name nodes that are called right away


def direct_call_names(tree: ast.AST) -> frozenset[int]:
    return frozenset(
        id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    )


def node_problem(node: ast.AST, rules: Rules) -> tuple[str, str] | None:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return import_problem(node, rules.allowed)
    if isinstance(node, ast.Attribute):
        return attribute_problem(node.attr)
    if isinstance(node, ast.alias):  # `from random import __builtins__`: the real builtins, by a name
        return name_problem(node.name, frozenset()) if node.name != "*" else None
    if isinstance(node, ast.MatchClass):  # `case object(__class__=c)` reads an attribute by its name
        return next(filter(None, map(attribute_problem, node.kwd_attrs)), None)
    if isinstance(node, ast.Name):
        if node.id in NAME_BASED_ACCESS and id(node) not in rules.direct_calls:
            return "builtin", f"'{node.id}' may only be called directly, with a literal attribute name"
        return name_problem(node.id, rules.forbidden)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAME_BASED_ACCESS:
        return name_based_access_problem(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return string_problem(node.value)
    return None


def import_problem(node: ast.Import | ast.ImportFrom, allowed: frozenset[str]) -> tuple[str, str] | None:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return "import", "relative imports are not allowed"
        names = [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    for name in names:
        if name.split(".")[0] not in allowed:
            return "import", f"import of '{name}' is not allowed (allowed: {', '.join(sorted(allowed))})"
    return None


def attribute_problem(attr: str) -> tuple[str, str] | None:
    if is_dunder(attr) and attr not in SAFE_DUNDERS:
        return "dunder", f"access to attribute '{attr}' is not allowed"
    if attr in INTROSPECTION_ATTRS:
        return "attribute", f"access to attribute '{attr}' is not allowed"
    return None


def name_problem(name: str, forbidden: frozenset[str]) -> tuple[str, str] | None:
    if is_dunder(name) and name not in SAFE_DUNDERS:
        return "dunder", f"use of name '{name}' is not allowed"
    if name in forbidden:
        return "builtin", f"use of '{name}' is not allowed"
    return None


def name_based_access_problem(call: ast.Call) -> tuple[str, str] | None:
    func = call.func.id  # type: ignore[attr-defined]
    if len(call.args) < 2 or not isinstance(call.args[1], ast.Constant) or not isinstance(call.args[1].value, str):
        return "builtin", f"{func}() needs a literal attribute name"
    return attribute_problem(call.args[1].value)


def string_problem(value: str | bytes) -> tuple[str, str] | None:
    # A dunder inside a string is how the name-based rules above get bypassed:
    # "{0.__class__}".format(x), attrgetter("__globals__"), ...
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    for word in DUNDER_WORD.findall(text):
        if word not in SAFE_DUNDERS:
            return "dunder", f"the string mentions '{word}', which is not allowed"
    return None
