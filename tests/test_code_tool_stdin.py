"""The code tool runs code tasks as code tasks: a contest program with the standard library
it needs (factory.sandbox.CODE_TASK_IMPORTS), fed stdin in AFM's <code> layout (```py then
```sh) or by keyword, in the real sandbox, whose kernel layers still hold."""

import asyncio
from pathlib import Path

import pytest

from factory.coa.tools import CodeTool, CodeToolConfig, ToolBox, ToolsConfig
from factory.coa.tools.code import NO_STDIN_HINT, program_and_stdin
from factory.sandbox import CODE_TASK_IMPORTS, sandbox_capabilities

LCB = Path(__file__).resolve().parents[2] / "shared" / "data" / "tasks" / "livecodebench_v5.parquet"
TOOL = CodeTool(CodeToolConfig(allowed_imports=CODE_TASK_IMPORTS))
PAIRING = ("import sys\nfrom collections import Counter\n"
           "print(sum(c // 2 for c in Counter(sys.stdin.read().split()).values()))")


def run(argument, **kwargs):
    return asyncio.run(TOOL(argument, **kwargs))


def test_afm_layout_splits_program_and_stdin():
    argument = "```py\nimport sys\n```\n```python\nprint(sys.stdin.read().split())\n```\n" \
               "```sh\n1 2\n```\n```bash\n3\n```"
    assert program_and_stdin(argument) == ("import sys\n\nprint(sys.stdin.read().split())", "1 2\n\n3\n")
    assert program_and_stdin("```python\nprint(1)\n```") == ("print(1)", None)
    assert program_and_stdin("print(1)") == ("print(1)", None)


@pytest.mark.skipif(not LCB.exists(), reason=f"task file not found at {LCB}")
def test_an_agent_tests_a_contest_program_on_the_tasks_sample_inputs():
    from factory.coa import load_tasks

    (task,) = [t for t in load_tasks(LCB) if t.id.endswith("/abc378_a")]
    for stdin, expected in zip(task.tests["stdin"], task.tests["expected_output"]):
        result = run(f"```py\n{PAIRING}\n```\n```sh\n{stdin}\n```")  # what AFM's <code> holds
        assert result.ok and result.text.strip() == expected.strip(), result.text
        assert result.meta["stdin_chars"] == len(stdin) + 1


def test_stdin_by_keyword_and_the_hint_when_there_is_none():
    assert run("n = int(input())\nprint(n * 2)", stdin="21\n").text == "42\n"
    missing = run("n = int(input())\nprint(n * 2)")
    assert not missing.ok and "EOFError" in missing.text and missing.text.endswith(NO_STDIN_HINT)


def test_the_modules_contest_programs_use_import():
    wanted = ("sys", "io", "heapq", "bisect", "random", "string", "operator", "copy", "dataclasses", "typing")
    assert set(wanted) <= set(CODE_TASK_IMPORTS)
    source = f"import {', '.join(wanted)}\nprint(heapq.nsmallest(1, [3, 1]), bisect.bisect([1, 3], 2), " \
             "string.ascii_lowercase[:3], operator.mul(6, 7), copy.deepcopy([[1]]), io.StringIO('x').read())"
    assert run(source).text == "[1] 1 abc 42 [[1]] x\n"
    assert run("import os\nos.listdir('/')").text.startswith("Rejected:")  # not in the profile


def test_the_kernel_layers_still_hold_with_sys_and_io():
    caps = sandbox_capabilities()
    if not caps["landlock_abi"]:
        pytest.skip("kernel without Landlock")
    read = run("import sys\ntry:\n    print(sys.modules['io'].open('/etc/passwd').read())\nexcept OSError as e:\n"
               "    print(type(e).__name__)")  # fmt: skip
    assert read.text == "PermissionError\n"
    write = run("import sys\nsys.modules['io'].open('/tmp/escaped_by_code_tool', 'w')")
    assert not write.ok and "PermissionError" in write.text and not Path("/tmp/escaped_by_code_tool").exists()


def test_the_toolbox_passes_the_afm_layout_through():
    toolbox = ToolBox.from_config(ToolsConfig(code=CodeToolConfig(allowed_imports=CODE_TASK_IMPORTS)))
    result = asyncio.run(toolbox.call("code", "```py\nprint(input()[::-1])\n```\n```sh\nabc\n```"))
    assert result.ok and result.text == "cba\n"
