"""Dropping the worker's privileges: no capabilities (bounding set included), no
supplementary groups, no_new_privs, and, where the sandbox runs as the real root,
the ids of `nobody` — so that no file of the host is its own to chmod or chown.

Where the parent is an ordinary user, the child is root only inside its user
namespace (`unshare --map-root-user`), which maps no other id: it stays that
user and sheds the namespace's capabilities. Either way `report()` reads back
from /proc what really held."""

from __future__ import annotations

import ctypes
import os

NOBODY = 65534
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4
CAP_VERSION_3 = 0x20080522
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def is_initial_root() -> bool:
    """Root of the machine itself, not of a user namespace that maps only itself."""
    try:
        with open("/proc/self/uid_map", encoding="ascii") as handle:
            return os.getuid() == 0 and handle.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return False


def target_ids() -> tuple[int, int] | None:
    """The (uid, gid) the worker takes, or None where it keeps its own (no other id is mapped)."""
    return (NOBODY, NOBODY) if is_initial_root() else None


def last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def prctl(lib: ctypes.CDLL, *args: int) -> int:
    return lib.prctl(*(ctypes.c_ulong(arg) for arg in args))


def drop(ids: tuple[int, int] | None) -> None:
    """For good: the bounding set first (that needs CAP_SETPCAP), then groups and ids,
    then whatever capabilities are left (a user-namespace root keeps them across no setuid)."""
    lib = ctypes.CDLL(None, use_errno=True)
    for cap in range(last_cap() + 1):
        prctl(lib, PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP, EINVAL past the kernel's last
    prctl(lib, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    try:
        os.setgroups([])
    except OSError:
        pass  # a user namespace whose setgroups is denied has none to drop
    if ids:
        os.setresgid(ids[1], ids[1], ids[1])
        os.setresuid(ids[0], ids[0], ids[0])
    header, data = CapHeader(CAP_VERSION_3, 0), (CapData * 2)()
    if lib.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if prctl(lib, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")


def status_fields() -> dict[str, str]:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            return dict(line.split(":\t", 1) for line in handle.read().splitlines() if ":\t" in line)
    except OSError:
        return {}


def report() -> dict:
    """What holds now, read back from the kernel: ids, capability sets, no_new_privs."""
    status = status_fields()
    caps = {name: int(status.get(name, "1").strip() or "1", 16) for name in CAP_FIELDS}
    return {"uid": os.getuid(), "gid": os.getgid(), "groups": len(os.getgroups()),
            "caps_empty": not any(caps[name] for name in CAP_FIELDS if name != "CapBnd"),
            "bounding_empty": caps["CapBnd"] == 0,
            "no_new_privs": status.get("NoNewPrivs", "").strip() == "1"}  # fmt: skip
