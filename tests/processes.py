"""Processes the tests start must not outlive the suite, also when it is killed (issue 28).

`die_with_parent` is a `preexec_fn` for subprocess.Popen: on Linux the child is sent SIGTERM when the process
that started it dies, however it dies (a SIGKILL too), via prctl(PR_SET_PDEATHSIG). `ray start --block` stops
the Ray processes it started on SIGTERM, so a killed suite leaves no cluster behind. Elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
