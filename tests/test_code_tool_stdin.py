"""The code tool runs code tasks as code tasks: a contest program with the standard library
it needs (factory.sandbox.CODE_TASK_IMPORTS, the tool's default), fed stdin in AFM's <code>
layout (```py then ```sh) or by keyword, in the real sandbox, whose kernel layers still hold:
with sys and io importable, a program still reaches no network and reads nothing outside
Python's own files (the gadget is tests/test_sandbox.py's)."""

import asyncio
import socket
from pathlib import Path

import pytest
from task_files import task_file

from factory.coa.tools import CodeTool, CodeToolConfig, ToolBox, ToolsConfig
from factory.coa.tools.code import NO_STDIN_HINT, program_and_stdin
from factory.sandbox import CODE_TASK_IMPORTS, sandbox_capabilities

LCB = task_file("livecodebench_v5.parquet")  # ../shared's, or the subset a bare clone ships
TOOL = CodeTool()  # the default profile: CODE_TASK_IMPORTS
PAIRING = (
    "import sys\nfrom collections import Counter\n"
    "print(sum(c // 2 for c in Counter(sys.stdin.read().split()).values()))"
)


def run(argument, **kwargs):
    return asyncio.run(TOOL(argument, **kwargs))


def stdout_of(text: str) -> str:
    """The STDOUT block of a successful run's observation (AFM's layout)."""
    head = "[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n"
    assert text.startswith(head) and text.endswith("\n[STDOUT:END]"), text
    return text[len(head) : -len("\n[STDOUT:END]")]


def test_the_default_profile_is_the_code_task_one():
    assert CodeToolConfig().allowed_imports == CODE_TASK_IMPORTS == TOOL.limits.allowed_imports
    assert ToolBox.from_config().allowed_modules() == CODE_TASK_IMPORTS  # what the prompts list


def test_afm_layout_splits_program_and_stdin():
    argument = (
        "```py\nimport sys\n```\n```python\nprint(sys.stdin.read().split())\n```\n```sh\n1 2\n```\n```bash\n3\n```"
    )
    assert program_and_stdin(argument) == ("import sys\n\nprint(sys.stdin.read().split())", "1 2\n\n3\n")
    assert program_and_stdin("```python\nprint(1)\n```") == ("print(1)", None)
    assert program_and_stdin("print(1)") == ("print(1)", None)


def test_an_agent_tests_a_contest_program_on_the_tasks_sample_inputs():
    from factory.tasks import load_tasks

    (task,) = [t for t in load_tasks(LCB) if t.id.endswith("/abc378_a")]
    for stdin, expected in zip(task.tests["stdin"], task.tests["expected_output"]):
        result = run(f"```py\n{PAIRING}\n```\n```sh\n{stdin}\n```")  # what AFM's <code> holds
        assert result.ok and stdout_of(result.text) == expected.strip(), result.text
        assert result.meta["stdin_chars"] == len(stdin) + 1


def test_stdin_by_keyword_and_the_hint_when_there_is_none():
    assert stdout_of(run("n = int(input())\nprint(n * 2)", stdin="21\n").text) == "42"
    missing = run("n = int(input())\nprint(n * 2)")
    assert not missing.ok and "EOFError" in missing.text and missing.text.endswith(f"{NO_STDIN_HINT}\n[STDERR:END]")


def test_the_modules_contest_programs_use_import():
    wanted = ("sys", "io", "heapq", "bisect", "random", "string", "operator", "copy", "dataclasses", "typing")
    assert set(wanted) <= set(CODE_TASK_IMPORTS)
    source = (
        f"import {', '.join(wanted)}\nprint(heapq.nsmallest(1, [3, 1]), bisect.bisect([1, 3], 2), "
        "string.ascii_lowercase[:3], operator.mul(6, 7), copy.deepcopy([[1]]), io.StringIO('x').read())"
    )
    assert stdout_of(run(source).text) == "[1] 1 abc 42 [[1]] x"
    refused = run("import os\nos.listdir('/')")  # not in the profile
    assert not refused.ok and "[STDERR:BEGIN]\nRejected: line 1: import of 'os' is not allowed" in refused.text


REFUSED = ("FileNotFoundError", "PermissionError")  # the host view hides the path; Landlock refuses it


def test_the_kernel_layers_still_hold_with_sys_and_io():
    caps = sandbox_capabilities()
    if not caps["landlock_abi"]:
        pytest.skip("kernel without Landlock")
    read = run(
        "import sys\ntry:\n    print(sys.modules['io'].open('/etc/passwd').read())\nexcept OSError as e:\n"
        "    print(type(e).__name__)"
    )
    assert stdout_of(read.text) in REFUSED  # hidden by the host view, or refused by Landlock
    write = run("import sys\nsys.modules['io'].open('/tmp/escaped_by_code_tool', 'w')")
    assert not write.ok and any(r in write.text for r in REFUSED) and not Path("/tmp/escaped_by_code_tool").exists()


def test_the_toolbox_passes_the_afm_layout_through():
    toolbox = ToolBox.from_config(ToolsConfig(code=CodeToolConfig(allowed_imports=CODE_TASK_IMPORTS)))
    result = asyncio.run(toolbox.call("code", "```py\nprint(input()[::-1])\n```\n```sh\nabc\n```"))
    assert result.ok and stdout_of(result.text) == "cba"


# The real builtins through an allowed module, and the real __import__ by a name built at run
# time: both pass the static check and the Python guards, so only the kernel stands in the way.
GADGET = "import dataclasses\nB = dataclasses.builtins\nREAL_IMPORT = B.getattr(B, '_' * 2 + 'import' + '_' * 2)\n"


def test_a_code_tool_program_reaches_no_network():
    caps = sandbox_capabilities()
    if not (caps["seccomp"] or caps["network_namespace"] or caps["landlock_network"]):
        pytest.skip("no kernel layer for the network on this machine")
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        port = server.getsockname()[1]
        connect = (
            f"{GADGET}socket = REAL_IMPORT('socket')\nimport sys\n"
            f"print(sys.version_info >= (3,))\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        )
        result = run(connect)
        assert not result.ok and result.text.startswith("[FAILED] Code exited with status ")
        assert "[STDOUT:BEGIN]\nTrue\n[STDOUT:END]" in result.text  # it ran, with sys, up to the connect
        assert "Error" in result.text.split("[STDERR:BEGIN]")[1]
        with pytest.raises(socket.timeout):
            server.accept()


def test_a_code_tool_program_reads_nothing_outside_its_scratch_dir(tmp_path):
    if not sandbox_capabilities()["landlock_abi"]:
        pytest.skip("kernel without Landlock")
    secret = tmp_path / "secret.txt"
    secret.write_text("the expected output")
    for reader in (
        f"B.open({str(secret)!r}).read()",
        f"sys.modules['io'].open({str(secret)!r}).read()",
        f"sys.modules['io'].FileIO({str(secret)!r}).read()",
    ):
        result = run(f"{GADGET}import sys\nprint({reader})")
        assert not result.ok and any(refusal in result.text for refusal in REFUSED), result.text
        assert "expected output" not in result.text
