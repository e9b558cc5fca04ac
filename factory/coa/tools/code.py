"""The `code` tool: a Python program run in `factory.sandbox`; the observation says what happened
in the layout AFM's code executor writes (verl/verl/tools/utils/code_executors/nsjail_sandbox.py,
`NsjailSandbox.exec`; verl/verl/tools/code_executor.py), so distilled rows read as AFM's do:

    [EXECUTED] Code exited with status 0.            ran, printed something (stdout only:
    [STDOUT:BEGIN]                                     AFM shows stderr only for a failure)
    120 1/2
    [STDOUT:END]
    [EXECUTED] Code exited with status 0 (no output).
    [FAILED] Code exited with status 1.              raised: the traceback is stderr
    [STDERR:BEGIN]
    Traceback (most recent call last): ...
    [STDERR:END]
    [FAILED] Code exited with status 1 with mixed output:
    [STDOUT:BEGIN] ... [STDOUT:END]                  (each block on its own lines, as above)
    [STDERR:BEGIN] ... [STDERR:END]
    [FAILED] Code exited with status 1 (no output).

A block's text is stripped; a block shows when the raw stream is non-empty (so
`print()` gives an empty STDOUT block, as in AFM). The status is the one AFM's
nsjail run reports: the process's own (sys.exit(3) -> 3), 128 + N for a fatal
signal N (nsjail's convention: CPU limit -> 152, killed -> 137), and 1 for a
wall-clock timeout, whose stdout is lost and whose stderr is AFM's own line
("Time out. Check for infinite loops, ..."). What only the sandbox can see —
a CPU timeout, the static check's refusal, a syntax error found before running,
the output or memory limit, a tampered result channel — is written as stderr,
as AFM's executor writes its timeout. A tool argument with no code at all gets
AFM's argument-error form, "ERROR: ...". No observation is ever empty.

The whole observation fits `max_output_chars`: a long block is cut in the middle
with AFM's marker (`truncate_content` in code_executors/utils.py), inside its
BEGIN/END lines, so the frame always survives and the end of a traceback shows.

Stdin, as AFM's code tool takes it (`parse_code_blobs_stdin_answer`): in an
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
empty and an EOFError's stderr ends with a hint. The default import list is
factory.sandbox.CODE_TASK_IMPORTS (sys and io included), so an agent can test a
contest program as it will be judged; the kernel layers confine it, and where the
kernel lacks Landlock or seccomp nothing runs: the observation is [FAILED] with
the sandbox's one-line reason (factory/sandbox/containment.py).

Notebook echo (`echo_last_expression`): when the last statement is a bare
expression, its value is printed with repr() unless it is None, as a notebook
shows Out[n] (whether or not something else was printed). The snippet is
rewritten only at that statement, so line numbers in errors stay the user's.
"""

from __future__ import annotations

import ast
import re
import signal

from ...sandbox import SandboxLimits, SandboxResult, arun_program
from .base import ToolResult, strip_fence
from .config import CodeToolConfig
from .registry import ToolSpec

ECHO_NAME = "_value_of_last_line"  # not a dunder: the sandbox's static check refuses those
PROGRAM_BLOCK = re.compile(r"```(?:py|python|python3)[ \t]*\n(.*?)```", re.DOTALL)
STDIN_BLOCK = re.compile(r"```(?:sh|bash)[ \t]*\n(.*?)```", re.DOTALL)
NO_STDIN_HINT = "(no stdin was given: put the input in a ```sh block after the ```py block)"
NO_CODE = "ERROR: no code was given: put the program in a ```py block (and its input in a ```sh block)"
# AFM's stderr for a run past its time (NsjailSandbox.run_in_nsjail), reported with status 1.
AFM_TIMEOUT = "Time out. Check for infinite loops, blocked I/O (e.g., input()), or deadlocks."
AFM_CUT = "\n..._This content has been truncated to stay below {n} characters_...\n"
SYSTEM_EXIT = re.compile(r"SystemExit: (.*)$")
EXIT_CODE = re.compile(r"-?\d+")
TRACEBACK = "Traceback (most recent call last):\n"
# Failures whose story the program's own stderr (its traceback) already tells.
TOLD_BY_STDERR = frozenset({"exception", "recursion", "exit_code"})


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


def exit_status(verdict: SandboxResult) -> int:
    """The exit status AFM's nsjail run would report for the same event."""
    if verdict.status == "timeout" and verdict.reason == "wall":
        return 1  # AFM's executor: the subprocess timed out, returncode 1
    code = system_exit(verdict)
    if code is not None:  # our runner exits 1 after reporting; a plain Python process exits with the code
        return int(code) % 256 if EXIT_CODE.fullmatch(code) else 1
    if verdict.signal:  # nsjail returns 128 + the signal that ended the child
        name = verdict.signal
        return 128 + (signal.Signals[name].value if name in signal.Signals.__members__ else int(name.split()[-1]))
    return verdict.exit_code if verdict.exit_code is not None else 1  # nothing ran: the static check refused


def system_exit(verdict: SandboxResult) -> str | None:
    """The code of a SystemExit that ended the program (as text), or None."""
    found = SYSTEM_EXIT.search(verdict.error or "") if verdict.reason == "exit_code" else None
    return found.group(1) if found else None


def program_stderr(verdict: SandboxResult) -> str:
    """stderr as a plain Python process leaves it: our runner writes a traceback for SystemExit,
    Python writes none, and prints a code that is not a number (sys.exit("bye") -> "bye")."""
    code = system_exit(verdict)
    if code is None:
        return verdict.stderr
    cut = verdict.stderr.rfind(TRACEBACK)
    stderr = verdict.stderr[:cut] if cut != -1 else verdict.stderr
    return stderr if EXIT_CODE.fullmatch(code) else f"{stderr}{code}\n"


def sandbox_note(verdict: SandboxResult, limits: SandboxLimits) -> str | None:
    """What only the sandbox saw, for stderr; None where the program's stderr tells it."""
    if verdict.status == "ok" or (verdict.reason in TOLD_BY_STDERR and verdict.stderr.strip()):
        return None
    if verdict.status == "timeout":
        return AFM_TIMEOUT
    if verdict.status == "rejected":
        return f"Rejected: {verdict.error}"
    if verdict.reason == "output":
        return f"Output limit exceeded: more than {limits.max_output_bytes} bytes were printed; the program was stopped"
    if verdict.reason == "memory":
        return f"MemoryError: the memory limit of {limits.memory_mb} MB was reached"
    return f"Error: {verdict.error or verdict.reason or verdict.status}"


def middle_cut(text: str, max_chars: int) -> str:
    """At most `max_chars` of `text`: its head and tail around AFM's truncation marker."""
    if len(text) <= max_chars:
        return text
    marker = AFM_CUT.format(n=max_chars)
    room = max_chars - len(marker)
    if room < 2:
        return text[: max(max_chars, 0)]
    tail = room // 2
    return text[: room - tail] + marker + text[len(text) - tail :]


def shares(texts: list[str], budget: int) -> list[str]:
    """`texts` cut to `budget` characters in all: short ones whole, long ones split the rest."""
    fitted, left = list(texts), budget
    by_length = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for done, index in enumerate(by_length):
        fitted[index] = middle_cut(texts[index], left // (len(texts) - done))
        left -= len(fitted[index])
    return fitted


def afm_observation(ok: bool, status: int, stdout: str, stderr: str, max_chars: int) -> str:
    """AFM's observation text; a stream shows when it is non-empty, stderr only for a failure."""
    streams = [(name, text) for name, text in (("STDOUT", stdout), ("STDERR", "" if ok else stderr)) if text]
    head = f"{'[EXECUTED]' if ok else '[FAILED]'} Code exited with status {status}"
    if not streams:
        return f"{head} (no output)."
    head += " with mixed output:" if len(streams) == 2 else "."
    frame = len(head) + sum(len(f"\n[{name}:BEGIN]\n\n[{name}:END]") for name, _ in streams)
    bodies = shares([text.strip() for _, text in streams], max_chars - frame)
    blocks = [f"[{name}:BEGIN]\n{body}\n[{name}:END]" for (name, _), body in zip(streams, bodies)]
    return "\n".join([head, *blocks])


def describe(verdict: SandboxResult, limits: SandboxLimits, max_chars: int, stdin_given: bool = True) -> str:
    """The observation for a verdict, in AFM's layout."""
    wall_timeout = verdict.status == "timeout" and verdict.reason == "wall"
    stdout = "" if wall_timeout else verdict.stdout  # AFM's timed-out subprocess leaves no stdout
    stderr = "" if wall_timeout else program_stderr(verdict)
    note = sandbox_note(verdict, limits)
    if not stdin_given and "EOFError" in (verdict.error or ""):
        note = f"{note}\n{NO_STDIN_HINT}" if note else NO_STDIN_HINT
    if note:
        stderr = f"{stderr.rstrip()}\n{note}" if stderr.strip() else note
    return afm_observation(verdict.ok, exit_status(verdict), stdout, stderr, max_chars)


class CodeTool:
    name = "code"

    def __init__(self, config: CodeToolConfig | None = None):
        self.config = config or CodeToolConfig()
        self.limits = SandboxLimits(
            wall_s=self.config.wall_s,
            cpu_s=self.config.cpu_s,
            memory_mb=self.config.memory_mb,
            allowed_imports=self.config.allowed_imports,
            # Enough to fill the observation; a print loop is stopped soon after.
            max_output_bytes=max(16_384, 4 * self.config.max_output_chars),
        )

    async def __call__(self, argument: str, stdin: str | None = None) -> ToolResult:
        source, fenced_stdin = program_and_stdin(argument)
        stdin = stdin if stdin is not None else fenced_stdin
        if not source.strip():
            return ToolResult(False, NO_CODE, {"status": "error", "reason": "empty"})
        if self.config.echo_last_expression:
            source = with_echo(source)
        verdict = await arun_program(source, stdin, limits=self.limits)
        text = describe(verdict, self.limits, self.config.max_output_chars, stdin_given=stdin is not None)
        meta = {"status": verdict.status, "reason": verdict.reason, "exit_status": exit_status(verdict),
                "duration_s": round(verdict.duration_s, 3),
                "stdin_chars": len(stdin) if stdin is not None else None}  # fmt: skip
        return ToolResult(verdict.ok, text, meta)


SPEC = ToolSpec(
    name="code", config=CodeToolConfig, build=lambda config, context: CodeTool(config), argument="the Python program", parameter="code",
    variants=("code",), on_request=("mas",), aliases=("python", "python_interpreter", "run_python"),
    rl_domains=("math", "code"), order=30,
)  # fmt: skip
