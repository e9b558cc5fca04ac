"""The code tool's observations, byte for byte as AFM's code executor writes them
(OPPO-PersonalAI/Agent_Foundation_Models, verl/verl/tools/utils/code_executors/nsjail_sandbox.py,
`NsjailSandbox.exec` and `run_in_nsjail`; the status of a signalled child is nsjail's 128 + N),
run in the real sandbox; and no observation is ever empty."""

import asyncio
import re

import pytest
from test_coa_distill import afm_tag_content

from factory.coa.tools import CodeTool, CodeToolConfig, ToolBox, ToolsConfig
from factory.coa.tools.code import NO_STDIN_HINT, middle_cut, shares

TOOL = CodeTool(CodeToolConfig(wall_s=5, cpu_s=2))
TIME_OUT = "Time out. Check for infinite loops, blocked I/O (e.g., input()), or deadlocks."
# Every form AFM's exec writes: (no output), one stream, or both ("with mixed output:").
AFM_FORM = re.compile(
    r"\[(?P<word>EXECUTED|FAILED)\] Code exited with status (?P<status>\d+)"
    r"(?: \(no output\)\.| with mixed output:\n\[STDOUT:BEGIN\]\n.*\n\[STDOUT:END\]\n\[STDERR:BEGIN\]\n.*\n"
    r"\[STDERR:END\]|\.\n\[(?P<stream>STDOUT|STDERR):BEGIN\]\n.*\n\[(?P=stream):END\])",
    re.DOTALL,
)


def run(argument, tool=TOOL, **kwargs):
    return asyncio.run(tool(argument, **kwargs))


def ran(stdout: str) -> str:
    return f"[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n{stdout}\n[STDOUT:END]"


def test_success_with_output_and_without():
    assert run("print('  a b  ')\nprint()").text == ran("a b")  # the block's text is stripped
    assert run("x = 1").text == "[EXECUTED] Code exited with status 0 (no output)."
    assert run("print()").text == ran("")  # a newline is output: AFM tests the raw stream
    # On success AFM shows stdout only: a warning on stderr does not make it "mixed".
    warned = run("import sys\nwritten = sys.stderr.write('careful\\n')")
    assert warned.text == "[EXECUTED] Code exited with status 0 (no output)."
    assert run("import sys\nprint(6 * 7)\nsys.exit(0)").text == ran("42")


def test_an_exception_is_a_failure_with_its_traceback_as_stderr():
    result = run("def f(x):\n    return 1 / x\n\nf(0)")
    assert not result.ok and result.meta["exit_status"] == 1
    # The frame byte for byte; the traceback between is Python's (its caret lines vary by version).
    assert result.text.startswith(
        "[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\n"
        'Traceback (most recent call last):\n  File "<sandbox>", line 4, in <module>\n'
    )
    assert '  File "<sandbox>", line 2, in f\n    return 1 / x\n' in result.text
    assert result.text.endswith("\nZeroDivisionError: division by zero\n[STDERR:END]")
    mixed = run("print('so far')\nraise ValueError('bad value')").text
    assert mixed.startswith(
        "[FAILED] Code exited with status 1 with mixed output:\n"
        "[STDOUT:BEGIN]\nso far\n[STDOUT:END]\n[STDERR:BEGIN]\nTraceback"
    )
    assert mixed.endswith("\nValueError: bad value\n[STDERR:END]")


def test_exit_codes_are_the_program_s_own():
    assert run("import sys\nprint('partial')\nsys.exit(3)").text == (
        "[FAILED] Code exited with status 3.\n[STDOUT:BEGIN]\npartial\n[STDOUT:END]"
    )
    assert run("import sys\nsys.exit(-1)").text == "[FAILED] Code exited with status 255 (no output)."
    assert run("import sys\nsys.exit('giving up')").text == (
        "[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\ngiving up\n[STDERR:END]"
    )


def test_timeouts():
    # Past the wall clock: AFM's subprocess timeout, status 1, its message, the stdout lost. CPU time never runs
    # ahead of the wall clock, so the wall limit fires first under any load.
    wall = run("print('started', flush=True)\nwhile True:\n    pass", CodeTool(CodeToolConfig(wall_s=1, cpu_s=5)))
    assert wall.text == f"[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\n{TIME_OUT}\n[STDERR:END]"
    assert wall.meta["reason"] == "wall"
    # Past the CPU limit: SIGXCPU, which nsjail reports as 128 + 24; what was flushed stays. The wall limit is far
    # off: on a busy machine one CPU second can take several wall seconds (issue 28).
    cpu = run("print('started', flush=True)\nwhile True:\n    pass", CodeTool(CodeToolConfig(wall_s=60, cpu_s=1)))
    assert cpu.text == (
        "[FAILED] Code exited with status 152 with mixed output:\n[STDOUT:BEGIN]\nstarted\n"
        f"[STDOUT:END]\n[STDERR:BEGIN]\n{TIME_OUT}\n[STDERR:END]"
    )
    assert cpu.meta["reason"] == "cpu"


def test_what_only_the_sandbox_saw_is_written_as_stderr():
    refused = run("import socket").text
    assert refused.startswith(
        "[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\n"
        "Rejected: line 1: import of 'socket' is not allowed (allowed: "
    )
    assert refused.endswith(")\n[STDERR:END]")
    assert run("print(1 +)").text == (
        "[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\nError: line 1: SyntaxError: invalid syntax\n[STDERR:END]"
    )
    flood = run("while True:\n    print('y' * 1000)").text
    assert flood.startswith("[FAILED] Code exited with status 137 with mixed output:\n[STDOUT:BEGIN]\nyyy")
    assert flood.endswith("[STDERR:BEGIN]\nOutput limit exceeded: more than 16384 bytes were printed; "
                          "the program was stopped\n[STDERR:END]") and len(flood) <= 3000  # fmt: skip


def test_stdin_programs():
    reverse = "```py\nimport sys\nprint(sys.stdin.readline().strip()[::-1])\n```\n```sh\nabc\n```"
    assert run(reverse).text == ran("cba")
    bad = run("```py\nprint(int(input()) + 1)\n```\n```sh\nnot a number\n```").text
    assert bad.startswith("[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\nTraceback")
    assert bad.endswith("\nValueError: invalid literal for int() with base 10: 'not a number'\n[STDERR:END]")
    missing = run("```py\nn = int(input())\nprint(n)\n```").text  # no ```sh block: the hint ends stderr
    assert missing.endswith(f"EOFError: EOF when reading a line\n{NO_STDIN_HINT}\n[STDERR:END]")


def test_a_long_stream_is_cut_in_the_middle_inside_its_frame():
    out = "".join(f"line {i}\n" for i in range(1400))
    source = f"import sys\nsys.stdout.write({out!r})\nsys.stderr.write('E' * 5000)\nsys.exit(4)"
    text = run(source, CodeTool(CodeToolConfig(max_output_chars=800))).text
    assert len(text) <= 800 and AFM_FORM.fullmatch(text), text
    assert text.startswith("[FAILED] Code exited with status 4 with mixed output:\n[STDOUT:BEGIN]\nline 0\n")
    assert "\nline 1399\n[STDOUT:END]\n[STDERR:BEGIN]\nEEE" in text and text.endswith("EEE\n[STDERR:END]")
    assert text.count("..._This content has been truncated to stay below ") == 2  # AFM's marker, each stream


def test_the_cut_helpers():
    assert middle_cut("abc", 3) == "abc"
    cut = middle_cut("x" * 50 + "y" * 200 + "z" * 50, 120)
    assert len(cut) == 120 and cut.startswith("xxx") and cut.endswith("zzz")
    assert "\n..._This content has been truncated to stay below 120 characters_...\n" in cut
    short, long = shares(["s" * 30, "l" * 1000], 200)
    assert short == "s" * 30 and len(long) == 170  # the short stream whole, the long one takes the rest


def test_the_toolbox_cut_never_takes_the_frame_off():
    toolbox = ToolBox.from_config(ToolsConfig(observation_chars=600))
    result = asyncio.run(toolbox.call("code", "for i in range(1000):\n    print(i)"))
    assert "cut_from_chars" not in result.meta and len(result.text) <= 600
    assert result.text.endswith("\n998\n999\n[STDOUT:END]")


ARGUMENTS = [
    "", "   ", "```py\n\n```", "pass", "print()", "print('')", "import sys\nsys.stdout.write('')", "print(' ')",
    "None", "x = 1", "1/0", "import sys\nsys.exit()", "import sys\nsys.exit(0)", "import sys\nsys.exit(1)",
    "import os", "def f(:", "import sys\nsys.stderr.write('')\nsys.exit(5)", "```py\nprint(input())\n```",
    "```py\nprint(input())\n```\n```sh\n\n```", "import sys\nsys.stdout.close()",
]  # fmt: skip


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_no_observation_is_ever_empty_and_each_is_in_afm_s_form(argument):
    result = run(argument)
    assert result.text.strip() and afm_tag_content(f"<observation>\n{result.text}\n</observation>")
    if result.meta.get("reason") == "empty":  # no code at all: AFM's argument-error form
        assert result.text.startswith("ERROR: ") and not result.ok
        return
    form = AFM_FORM.fullmatch(result.text)
    assert form, result.text
    assert (form["word"] == "EXECUTED") == result.ok == (form["status"] == "0" and result.meta["status"] == "ok")
    assert not (result.ok and "[STDERR:BEGIN]" in result.text)
