"""What this machine's kernel lets the sandbox use; probed once per process."""

from __future__ import annotations

import functools
import shutil
import subprocess

from .child import landlock, seccomp


@functools.lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """The command prefix that gives the child an empty network namespace, or ()
    where none can be had: `unshare --net` as root, `--map-root-user` for an
    ordinary user where user namespaces are allowed."""
    unshare = shutil.which("unshare")
    if not unshare:
        return ()
    for prefix in ((unshare, "--net"), (unshare, "--map-root-user", "--net")):
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if probe.returncode == 0:
            return prefix
    return ()


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    return landlock.abi_version()


def sandbox_capabilities() -> dict[str, object]:
    """The kernel layers a sandboxed run gets here, beside the ones it always gets
    (static check, Python guards, rlimits, process group, scratch directory)."""
    return {
        "network_namespace": bool(network_namespace_prefix()),
        "landlock_abi": landlock_abi(),
        "landlock_network": landlock_abi() >= 4,
        "landlock_signal_scope": landlock_abi() >= 6,
        "seccomp": seccomp.supported(),
    }
