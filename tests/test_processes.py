"""A child the tests start dies with the process that started it, even one killed outright (issue 28)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its reaper is gone for our purpose
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_a_child_started_with_die_with_parent_goes_when_its_parent_is_killed(tmp_path):
    parent = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from processes import die_with_parent
        child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent, start_new_session=True)
        print(child.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    assert alive(child)
    proc.send_signal(signal.SIGKILL)  # no finally, no atexit: only the kernel can tell the child
    proc.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
