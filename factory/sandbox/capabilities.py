"""What this machine's kernel lets the sandbox use; probed once per process."""

from __future__ import annotations

import functools
import shutil
import subprocess

from .child import landlock, privileges, seccomp


@functools.lru_cache(maxsize=1)
def namespace_support() -> tuple[tuple[str, ...], frozenset[str]]:
    """(`unshare` and its user option, the namespaces it can give: "mount", "net"):
    `unshare` alone as root, `--map-root-user` for an ordinary user where user
    namespaces are allowed; ((), {}) where none can be had."""
    unshare = shutil.which("unshare")
    if not unshare:
        return (), frozenset()
    for user in ((), ("--map-root-user",)):
        for spaces in (("--mount", "--net"), ("--net",), ("--mount",)):
            try:
                probe = subprocess.run([unshare, *user, *spaces, "true"], capture_output=True, timeout=10, check=False)
            except (OSError, subprocess.SubprocessError):
                continue
            if probe.returncode == 0:
                return (unshare, *user), frozenset(space[2:] for space in spaces)
    return (), frozenset()


def namespace_prefix(network: bool = True) -> tuple[str, ...]:
    """The command prefix for the child: a mount namespace (the scratch tmpfs) and,
    unless `network` is False, an empty network namespace, as far as this machine allows."""
    base, spaces = namespace_support()
    flags = [f"--{space}" for space in ("mount", "net") if space in spaces and (network or space != "net")]
    return (*base, *flags) if flags else ()


def network_namespace_prefix() -> tuple[str, ...]:
    return namespace_prefix() if "net" in namespace_support()[1] else ()


@functools.lru_cache(maxsize=1)
def landlock_abi() -> int:
    return landlock.abi_version()


def sandbox_capabilities() -> dict[str, object]:
    """The kernel layers a sandboxed run gets here, beside the ones it always gets
    (static check, Python guards, rlimits, process group, scratch directory)."""
    return {
        "network_namespace": bool(network_namespace_prefix()),
        "mount_namespace": "mount" in namespace_support()[1],
        "scratch_quota": "mount" in namespace_support()[1],
        # nobody's ids where the parent is the machine's root; elsewhere its own id, capabilities shed
        "unprivileged_ids": privileges.is_initial_root(),
        "landlock_abi": landlock_abi(),
        "landlock_network": landlock_abi() >= 4,
        "landlock_signal_scope": landlock_abi() >= 6,
        "seccomp": seccomp.supported(),
    }
