"""An adversarial review of the hardened sandbox (issue 14): what hostile code tries with
every kernel layer on. The static check and the Python guards are left out (module gadgets
walk around both, see test_sandbox_hostile.py), so each attack meets the kernel layers,
the runner/worker split and the parent alone. The host is checked where the attack aims
at it: only files and processes this test creates are looked at."""

import asyncio
import os
import platform
import subprocess
import time
import uuid

import pytest

from factory.sandbox import SandboxLimits, arun_program, run_function, run_program, sandbox_refusal

pytestmark = [
    pytest.mark.skipif(platform.system() != "Linux", reason="the sandbox's kernel layers are Linux's"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the threat is a root parent: run as root (CI does)"),
]
LIMITS = SandboxLimits(wall_s=4)
# The worker's end of the channel: the one pipe it can write to (stdout and stderr are 1 and 2).
FIND_PIPE = """
import os, stat, struct, time
def channel_fd():
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"")
                return fd
        except OSError:
            continue
def send(body):
    os.write(channel_fd(), struct.pack(">I", len(body)) + body)
"""


@pytest.fixture(autouse=True)
def kernel_layers_only(monkeypatch):
    refused = sandbox_refusal()
    if refused:
        pytest.skip(f"the sandbox does not run here: {refused}")
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "static_check,python_guards")


def held(verdict) -> dict:
    isolation = verdict.isolation
    return {"landlock": isolation.get("landlock_abi", 0) > 0, "seccomp": isolation.get("seccomp") is True,
            "channel": isolation.get("result_channel") is True}  # fmt: skip


def test_function_mode_ok_end_before_the_calls_is_tampered():
    """Finding: the module wrote {"kind": "end", "status": "ok"} and exited 0 before any call
    ran; the runner wrote it as the run's end, and the verdict said `ok` for work not done."""
    source = FIND_PIPE + 'send(b\'{"kind": "end", "status": "ok"}\')\nos._exit(0)\ndef f(x):\n    return x\n'
    verdict = run_function(source, "f", [[1], [2]], LIMITS, _skip_static_check=True)
    assert held(verdict) == {"landlock": True, "seccomp": True, "channel": True}
    assert (verdict.status, verdict.reason) == ("error", "tampered"), verdict
    assert [call.status for call in verdict.calls] == ["error", "error"]


def test_a_real_module_failure_before_the_calls_still_reads_as_its_own_error():
    verdict = run_function("raise ValueError('no')\ndef f():\n    return 1\n", "f", [[]], LIMITS)
    assert (verdict.status, verdict.reason) == ("error", "exception")
    missing = run_function("x = 1\n", "f", [[]], LIMITS)
    assert (missing.status, missing.reason) == ("error", "missing_function")
