"""The `code` tool: a Python snippet run in `factory.sandbox`; its output is the observation.

Observations, by what happened:
- ran: the printed stdout (and stderr, e.g. warnings), capped at max_output_chars;
  "(no output: use print() to see values)" when nothing was printed.
- raised: what was printed before, then "Error: line 3: ZeroDivisionError: division by zero".
- rejected by the static check (os, open, eval, dunders...): "Rejected: line 1: import of 'os' ...".
- past the limits: "Timed out after 10 s" / "Timed out: more than 5 s of CPU time".

Stdin, as AFM's code tool takes it (verl/verl/tools/code_executor.py and
utils/code_executors/nsjail_sandbox.py, `parse_code_blobs_stdin_answer`): in an
argument with ```py / ```python blocks, those blocks are the program (joined by a
blank line) and the ```sh / ```bash blocks are its stdin (joined by a newline):

    ```py
    n = int(input()); print(sum(map(int, input().split())) * n)
    ```
    ```sh
    2
    3 4
    ```

`await tool(code, stdin="2\n3 4\n")` says the same without fences. The program
reads a real stdin (input(), sys.stdin, sys.stdin.buffer); without one, stdin is
empty and an EOFError comes with a hint. With `sys` and `io` in the import list
(factory.sandbox.CODE_TASK_IMPORTS) an agent can test a contest program as it
will be judged.

Notebook echo (`echo_last_expression`): when the last statement is a bare
expression, its value is printed with repr() unless it is None, as a notebook
shows Out[n] (whether or not something else was printed). The snippet is
rewritten only at that statement, so line numbers in errors stay the user's.
"""

from __future__ import annotations

import ast
import re

from ...sandbox import SandboxLimits, Verdict, arun_program
from .base import ToolResult, cap_text, strip_fence
from .config import CodeToolConfig

ECHO_NAME = "_value_of_last_line"  # not a dunder: the sandbox's static check refuses those
NO_OUTPUT = "(no output: use print() to see values)"
STDERR_CHARS = 1000  # warnings are worth a glance, not the whole observation
PROGRAM_BLOCK = re.compile(r"```(?:py|python|python3)[ \t]*\n(.*?)```", re.DOTALL)
STDIN_BLOCK = re.compile(r"```(?:sh|bash)[ \t]*\n(.*?)```", re.DOTALL)
NO_STDIN_HINT = "(no stdin was given: put the input in a ```sh block after the ```py block)"


def program_and_stdin(argument: str) -> tuple[str, str | None]:
    """(the program, its stdin or None) from a tool argument in AFM's layout, or plain code."""
    programs = PROGRAM_BLOCK.findall(argument)
    if not programs:
        return strip_fence(argument), None
    inputs = STDIN_BLOCK.findall(argument)
    return "\n\n".join(block.strip("\n") for block in programs), "\n".join(inputs) if inputs else None


def with_echo(source: str) -> str:
    """`source` with its final bare expression assigned and printed (if not None)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source  # the sandbox reports the syntax error with its line
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return source
    last = tree.body[-1]
    lines = source.splitlines(keepends=True)
    start = offset_of(lines, last.lineno, last.col_offset)
    end = offset_of(lines, last.end_lineno, last.end_col_offset)
    # Parentheses let a multi-line expression keep its lines; nothing is inserted before it.
    assigned = f"{ECHO_NAME} = ({source[start:end]})"
    echo = f"\nif {ECHO_NAME} is not None:\n    print(repr({ECHO_NAME}))\n"
    return source[:start] + assigned + source[end:] + echo


def offset_of(lines: list[str], lineno: int, col_offset: int) -> int:
    # ast columns count UTF-8 bytes, not characters.
    line = lines[lineno - 1]
    return sum(len(text) for text in lines[: lineno - 1]) + len(line.encode("utf-8")[:col_offset].decode("utf-8"))


def describe(verdict: Verdict, limits: SandboxLimits, max_chars: int) -> tuple[str, bool]:
    """The observation text for a verdict, and whether the code ran cleanly."""
    printed = verdict.stdout
    if verdict.status == "ok":
        text = printed if printed.strip() else NO_OUTPUT
        if verdict.stderr.strip():
            text += "\n[stderr]\n" + cap_text(verdict.stderr.strip(), STDERR_CHARS)[0]
        return cap_text(text, max_chars)[0], True
    if verdict.status == "rejected":
        return f"Rejected: {verdict.error}", False
    if verdict.status == "timeout":
        problem = (
            f"Timed out: more than {limits.cpu_s:g} s of CPU time"
            if verdict.reason == "cpu" else f"Timed out after {limits.wall_s:g} s"
        )  # fmt: skip
    elif verdict.status == "killed" and verdict.reason == "output":
        problem = "Output limit exceeded: the program was stopped"
    elif verdict.reason == "memory":
        problem = f"Error: {verdict.error} (memory limit {limits.memory_mb} MB)"
    else:
        problem = f"Error: {verdict.error or verdict.reason or verdict.status}"
    if not printed.strip():
        return problem, False
    # Keep room for the problem line: it matters more than the end of the output.
    head, _ = cap_text(printed.rstrip("\n"), max(0, max_chars - len(problem) - 60))
    return f"{head}\n{problem}", False


class CodeTool:
    name = "code"

    def __init__(self, config: CodeToolConfig | None = None):
        self.config = config or CodeToolConfig()
        self.limits = SandboxLimits(
            wall_s=self.config.wall_s, cpu_s=self.config.cpu_s, memory_mb=self.config.memory_mb,
            allowed_imports=self.config.allowed_imports,
            # Enough to fill the observation; a print loop is stopped soon after.
            max_output_bytes=max(16_384, 4 * self.config.max_output_chars),
        )  # fmt: skip

    async def __call__(self, argument: str, stdin: str | None = None) -> ToolResult:
        source, fenced_stdin = program_and_stdin(argument)
        stdin = stdin if stdin is not None else fenced_stdin
        if not source.strip():
            return ToolResult(False, "Error: no code given", {"status": "error", "reason": "empty"})
        if self.config.echo_last_expression:
            source = with_echo(source)
        verdict = await arun_program(source, stdin, limits=self.limits)
        text, ok = describe(verdict, self.limits, self.config.max_output_chars)
        if stdin is None and "EOFError" in (verdict.error or ""):
            text += "\n" + NO_STDIN_HINT
        meta = {"status": verdict.status, "reason": verdict.reason, "duration_s": round(verdict.duration_s, 3),
                "stdin_chars": len(stdin) if stdin is not None else None}  # fmt: skip
        return ToolResult(ok, text, meta)
