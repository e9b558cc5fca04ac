"""A programming task's public samples, and whether the final program was run on each before it was answered.

    samples = public_samples(question)              # [("5\\n2 3 5 10 12", "17"), ...]
    missing = untested(trace, program, samples)     # the samples no tool call ran this program on

Capable models answered code tasks with a program they never ran as it will be judged
(issue 25). The public samples are the ones the question itself shows (AtCoder's
"Sample Input 1" / "Sample Output 1"); the hidden tests of the task are never used here,
so nothing the agent could not see reaches its trajectory. A sample counts as tested when
a successful code call ran the answer's program (the same syntax tree: comments and layout
aside) with that sample's input on stdin (a ```sh block), as the judge will run it.
"""

from __future__ import annotations

import ast
import re

from ..checks.extract import python_code
from .tools.code import program_and_stdin
from .trace import Trace

SAMPLE = re.compile(
    r"Sample Input\s*(\d*)\s*\n(.*?)\n\s*Sample Output\s*\1\s*\n\s*\n?(.*?)(?:\n\s*\n|\Z)", re.DOTALL | re.IGNORECASE
)
MAX_SAMPLES = 3


def public_samples(question: str) -> list[tuple[str, str]]:
    """(stdin, expected stdout) of each sample the question shows, at most MAX_SAMPLES."""
    text = question.replace("\r\n", "\n")
    found = [(given.strip("\n"), expected.strip()) for _, given, expected in SAMPLE.findall(text)]
    return [(given, expected) for given, expected in found if given.strip()][:MAX_SAMPLES]


def normalized_program(source: str) -> str:
    """The program's syntax tree, so that comments and layout do not count; its text when it does not parse."""
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return "\n".join(line.rstrip() for line in source.strip().splitlines() if line.strip())


def normalized_input(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines() if line.strip())


def untested(trace: Trace, answer: str, samples: list[tuple[str, str]]) -> list[int]:
    """1-based numbers of the samples that no successful code call ran the answer's program on."""
    program = normalized_program(python_code(answer) or answer)
    ran = set()
    for call in trace.tool_calls():
        if call.name != "code" or not call.ok:
            continue
        source, stdin = program_and_stdin(call.argument)
        if normalized_program(source) == program and stdin is not None:
            ran.add(normalized_input(stdin))
    return [number for number, (given, _) in enumerate(samples, 1) if normalized_input(given) not in ran]


def test_steps(missing: list[int]) -> list[str]:
    """One plan step per run still missing: the judge runs the program once per input."""
    return [
        f"Run the final program, exactly as it will be answered, on sample input {number} (the program in a ```py "
        "block, the sample in a ```sh block) and compare its output with the expected output."
        for number in missing
    ]
