"""Containment needs the kernel (factory/sandbox/containment.py): the reviewer's escapes
(issue 12), replayed with the capability probes switched off as the reviewer did, must
not run; a code task is then a recorded error, never a score. The Python layers are no
boundary for any profile, the default one included, and the tests show why."""

import ast
import asyncio
import logging

import pytest

import factory.sandbox.api as api
from factory.checks import CODE_LIMITS, CodeTests
from factory.coa.tools import CodeTool
from factory.sandbox import (
    CODE_TASK_IMPORTS,
    DEFAULT_ALLOWED_IMPORTS,
    SandboxLimits,
    check_source,
    containment,
    run_function,
    run_program,
    sandbox_capabilities,
    sandbox_refusal,
)  # fmt: skip
from factory.sandbox.child import seccomp
from factory.tasks import Task

CODE = SandboxLimits(cpu_s=5, wall_s=8, allowed_imports=CODE_TASK_IMPORTS)
CAPS = sandbox_capabilities()


def ctypes_system(marker) -> str:  # t6.py / t6b.py
    return (
        "import sys\nct = sys.modules['importlib'].import_module('ctypes')\n"
        f"print(ct.CDLL(None).system(b'echo ESCAPED > {marker}'))\n"
    )


def io_write(marker) -> str:  # t6d.py
    return f"import io\nio.open({str(marker)!r}, 'w').write('owned')\nprint('wrote')\n"


# The default profile, no sys, io or importlib in the allowlist: sys is an attribute of datetime.
DEFAULT_PROFILE_ESCAPE = (
    "import datetime\nil = datetime.sys.modules['importlib']\n"
    "print(il.import_module('ctypes').CDLL(None).system(b'echo ESCAPED > {marker}'))\n"
)


@pytest.fixture
def no_landlock(monkeypatch):
    monkeypatch.delenv(containment.UNCONTAINED_ENV, raising=False)
    monkeypatch.setattr(api, "landlock_abi", lambda: 0)


@pytest.fixture
def no_kernel_layers(no_landlock, monkeypatch):
    monkeypatch.setattr(seccomp, "supported", lambda: False)


def assert_refused(verdict, lacking: str) -> None:
    assert (verdict.status, verdict.reason) == ("error", "isolation"), (verdict.status, verdict.error)
    assert lacking in verdict.error and "not run" in verdict.error and not verdict.stdout


def test_without_landlock_and_seccomp_the_ctypes_escape_does_not_run(no_kernel_layers, tmp_path):
    marker = tmp_path / "escaped.txt"
    assert_refused(run_program(ctypes_system(marker), limits=CODE), "Landlock (the filesystem) and seccomp")
    assert not marker.exists()


def test_without_landlock_alone_io_open_writes_nothing(no_landlock, tmp_path):
    marker = tmp_path / "written_by_sandbox.txt"
    assert_refused(run_program(io_write(marker), limits=CODE), "lacks Landlock (the filesystem),")
    assert not marker.exists()


def test_the_default_profile_is_no_boundary_either(no_kernel_layers, tmp_path):
    """Falling back to DEFAULT_ALLOWED_IMPORTS would not contain anything: the static check
    lets this pass, so only the refusal (or the kernel) stops it."""
    marker = tmp_path / "escaped.txt"
    source = DEFAULT_PROFILE_ESCAPE.format(marker=marker)
    assert check_source(source, DEFAULT_ALLOWED_IMPORTS) is None
    assert_refused(run_program(source), "Landlock")
    verdict = run_function(source + "def f():\n    return 1\n", "f", [[], []])
    assert_refused(verdict, "Landlock")
    assert [call.reason for call in verdict.calls] == ["isolation", "isolation"]
    assert not marker.exists()


def test_a_code_task_is_a_recorded_error_not_a_score(no_kernel_layers):
    task = Task(id="t/echo", question="print the input", domain="code", source="t",
                tests={"stdin": ["7\n"], "expected_output": ["7\n"]})  # fmt: skip
    checker = CodeTests(limits=CODE_LIMITS.model_copy(update={"wall_s": 6, "cpu_s": 3}))
    result = checker.check("```python\nimport sys\nprint(sys.stdin.read().strip())\n```", task)
    assert (result.correct, result.score) == (False, 0.0)
    assert result.error and result.error.startswith("task t/echo not judged: not run: this kernel lacks Landlock")


def test_the_code_tool_says_why_nothing_ran(no_kernel_layers):
    result = asyncio.run(CodeTool()("print(1)"))
    assert not result.ok and result.meta["reason"] == "isolation"
    assert result.text.startswith("[FAILED]") and "this kernel lacks Landlock" in result.text


def test_an_operator_may_accept_uncontained_runs_and_is_warned_once(no_kernel_layers, monkeypatch, caplog):
    monkeypatch.setenv(containment.UNCONTAINED_ENV, "1")
    monkeypatch.setattr(containment, "_warned", set())
    with caplog.at_level(logging.WARNING, logger=containment.__name__):
        assert sandbox_refusal() is None
        first, second = run_program("print(6 * 7)"), run_program("print(1)")
    assert first.stdout == "42\n" and second.ok
    assert first.isolation["landlock_abi"] == 0 and first.isolation["seccomp"] is False  # the child was told
    warnings = [r.message for r in caplog.records if "UNCONTAINED" in r.message]
    assert len(warnings) == 1 and "lacks Landlock (the filesystem) and seccomp" in warnings[0]


def test_a_kernel_with_the_layers_runs_and_holds(tmp_path, monkeypatch):
    monkeypatch.delenv(containment.UNCONTAINED_ENV, raising=False)
    if not (CAPS["landlock_abi"] and CAPS["seccomp"]):
        assert sandbox_refusal() and "lacks" in sandbox_refusal()
        pytest.skip("kernel without the layers: refusal checked instead")
    assert sandbox_refusal() is None
    marker = tmp_path / "escaped.txt"
    for source in (ctypes_system(marker), io_write(marker), DEFAULT_PROFILE_ESCAPE.format(marker=marker)):
        verdict = run_program(source, limits=CODE)
        assert verdict.isolation["landlock_abi"] >= 1 and verdict.isolation["seccomp"] is True
        assert not marker.exists(), verdict
    assert run_program("import os", limits=CODE).reason == "import"  # layer 1 still answers first


@pytest.mark.skipif(not CAPS["seccomp"], reason="kernel without seccomp")
def test_truncate_by_path_is_denied_by_seccomp_alone(no_landlock, monkeypatch, tmp_path):
    """Landlock below ABI 3 does not govern truncate(2); the seccomp filter does, on every ABI.
    Landlock is off here (the operator's override lets the run start), so seccomp is all that stops it."""
    monkeypatch.setenv(containment.UNCONTAINED_ENV, "1")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    source = (
        "import random\ntry:\n    random._os.truncate(" + repr(str(victim)) + ", 0)\n"
        "except OSError as e:\n    print(type(e).__name__)\n"
    )
    verdict = run_program(source)
    assert verdict.stdout == "PermissionError\n" and verdict.isolation["landlock_abi"] == 0
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize(
    "source",
    [
        "from random import __builtins__ as b\nprint(b['_' * 2 + 'import' + '_' * 2]('ctypes'))",
        "match 1:\n    case object(__class__=c):\n        print(c)",
    ],
)
def test_dunders_by_import_alias_and_match_pattern_are_refused(source):
    issue = check_source(source, DEFAULT_ALLOWED_IMPORTS)
    assert issue and (issue.status, issue.reason) == ("rejected", "dunder") and issue.line in (1, 2)


def test_refine_with_validation_code_stops_up_front_where_the_sandbox_cannot_hold(monkeypatch):
    """Not a run of scripts whose every validation function reads "not run" as the script's flaw."""
    from factory.errors import FactoryError
    from factory.refine.validation_code import SandboxCodeChecker
    from factory.sandbox import api

    monkeypatch.setattr(api, "landlock_abi", lambda: 0)
    monkeypatch.delenv("FACTORY_SANDBOX_UNCONTAINED", raising=False)
    with pytest.raises(FactoryError, match="^refine: validation code cannot run here: .*Landlock.*--no-code$"):
        SandboxCodeChecker()


# --- issue 14: the worker's privileges, the seccomp findings, the scratch quota, the knob ---------------
GADGET_OS = "import random\nos = random._os\nimport sys\nC = sys.modules['importlib'].import_module('ctypes')\n"
needs_root = pytest.mark.skipif(not CAPS["unprivileged_ids"], reason="the parent is not the machine's root")


@needs_root
def test_the_worker_is_nobody_with_no_capabilities(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    source = (
        GADGET_OS + "print(os.getuid(), os.getgid(), os.getgroups())\n"
        f"try:\n    os.chown({str(victim)!r}, 0, 0)\n"
        "except OSError as e:\n    print(type(e).__name__)\n"
    )
    verdict = run_program(source, limits=CODE)
    assert verdict.stdout.splitlines() == ["65534 65534 []", "PermissionError"], verdict
    held = verdict.isolation["privileges"]
    assert held == {"uid": 65534, "gid": 65534, "groups": 0, "caps_empty": True, "bounding_empty": True,
                    "no_new_privs": True}  # fmt: skip
    assert run_program("import math\nprint(math.pi)", limits=CODE).ok  # Python still readable for nobody


SECCOMP_FINDINGS = {  # harmless arguments (a file of the scratch): a call let through would do nothing to the host
    "chmod": "libc.chmod(b'mine', 0o600)",
    "fchmodat2": "libc.syscall(452, -100, b'mine', 0o600, 0)",
    "utimensat": "libc.utimensat(-100, b'mine', None, 0)",
    "setxattr": "libc.setxattr(b'mine', b'user.x', b'1', 1, 0)",
    "socket_unix": "libc.socket(1, 1, 0)",
    "reboot_bad_magic": "libc.syscall(169, 0, 0, 0, 0)",
    "sethostname_same": "libc.sethostname(os.uname().nodename.encode(), len(os.uname().nodename))",
    "syslog_size": "libc.syslog_size(10, None, 0)",
    "fanotify_init": "libc.fanotify_init(0, 0)",
    "sched_setscheduler": "libc.sched_setscheduler(0, 0, C.byref(C.c_int(0)))",
    "setpriority": "libc.setpriority(0, 0, 0)",
    "setuid": "libc.setuid(0)",
    "prlimit_other": "libc.prlimit(1, 7, None, None)",
}


@pytest.mark.skipif(not CAPS["seccomp"], reason="kernel without seccomp")
def test_seccomp_alone_denies_every_finding_with_eperm(monkeypatch):
    """Privileges and Landlock switched off (the knob): the filter is all that answers, with EPERM."""
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "privileges,landlock")
    body = "".join(f"    {name!r}: ({call}, C.get_errno()),\n" for name, call in SECCOMP_FINDINGS.items())
    source = (
        GADGET_OS + "os.close(os.open('mine', os.O_WRONLY | os.O_CREAT))\n"
        "libc = C.CDLL(None, use_errno=True)\nlibc.syslog_size = libc.klogctl\n"
        "results = {\n" + body + "}\nprint(results)\n"
    )
    verdict = run_program(source, limits=CODE)
    assert verdict.ok, verdict
    results = ast.literal_eval(verdict.stdout)
    assert {name: got for name, got in results.items() if got != (-1, 1)} == {}
    assert verdict.isolation["disabled"] == ["privileges", "landlock"] and verdict.isolation["landlock_abi"] == 0


@pytest.mark.skipif(not CAPS["scratch_quota"], reason="no mount namespace for a scratch tmpfs")
@pytest.mark.parametrize("source, what", [
    ("import sys\nos = sys.modules['os']\nfd = os.open('big', os.O_WRONLY | os.O_CREAT)\n"
     "for _ in range(20):\n    os.write(fd, b'x' * (1 << 20))\n", "No space left"),
    ("import sys\nos = sys.modules['os']\nfor i in range(100):\n"
     "    os.close(os.open(str(i), os.O_WRONLY | os.O_CREAT))\n",
     "No space left"),
])  # fmt: skip
def test_a_full_scratch_is_the_codes_own_oserror(source, what):
    limits = CODE.model_copy(update={"scratch_mb": 8, "scratch_files": 32})
    verdict = run_program(source, limits=limits)
    assert (verdict.status, verdict.reason) == ("error", "exception") and what in verdict.error, verdict
    assert verdict.isolation["scratch_quota"] == {"mb": 8, "files": 32}


def test_the_knob_names_only_known_layers_and_waives_containment(monkeypatch):
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "seccomp, no_such_layer")
    verdict = run_program("print(1)")
    assert (verdict.status, verdict.reason) == ("error", "input") and "no_such_layer" in verdict.error
    assert "no_such_layer" in sandbox_refusal()
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "static_check")
    assert run_program("import os\nprint(1)").reason == "exception"  # the guard answers instead: ImportError
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "landlock,seccomp")
    monkeypatch.setattr(api, "landlock_abi", lambda: 0)  # a kernel lacking a layer the test switched off anyway
    monkeypatch.delenv(containment.UNCONTAINED_ENV, raising=False)
    verdict = run_program("print(1)", limits=CODE)
    assert verdict.ok and verdict.isolation["seccomp"] is False
    assert verdict.isolation["disabled"] == ["landlock", "seccomp"]


def test_without_a_mount_namespace_the_parent_watches_the_scratch(monkeypatch):
    """The fallback quota: no tmpfs, so the parent measures the scratch directory and kills past it."""
    base, spaces = api.namespace_support()
    monkeypatch.setattr(api, "namespace_support", lambda: (base, spaces - {"mount"}))
    # file_size_mb well past the quota: RLIMIT_FSIZE must not end the writer before the parent's 50 ms watch does
    limits = CODE.model_copy(update={"scratch_mb": 4, "scratch_files": 32, "wall_s": 20, "file_size_mb": 256})
    writer = (
        "import sys\nos = sys.modules['os']\nfd = os.open('big', os.O_WRONLY | os.O_CREAT)\nwhile True:\n"
        "    os.write(fd, b'x' * (1 << 20))\n    os.fsync(fd)\n"
    )
    verdict = run_program(writer, limits=limits)
    assert (verdict.status, verdict.reason) == ("error", "scratch"), verdict
    many = run_program(
        "import sys\nos = sys.modules['os']\nfor i in range(10 ** 6):\n"
        "    os.close(os.open(str(i), os.O_WRONLY | os.O_CREAT))\n",
        limits=limits,
    )
    assert (many.status, many.reason) == ("error", "scratch"), many
    fine = run_program("print(1)", limits=limits)
    assert fine.ok and fine.isolation["scratch_quota"] == {"mb": 4, "files": 32, "watched": True}
