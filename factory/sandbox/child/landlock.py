"""Landlock (Linux >= 5.13): a file-system and network allowlist that binds root too.

The child may read the Python installation and a few system paths and may write
only inside its scratch directory; TCP bind/connect (ABI >= 4) and signals to
processes outside the sandbox (ABI >= 6) are refused. Everything is done with
raw syscalls through ctypes because Python has no binding.
"""

from __future__ import annotations

import ctypes
import os

# Same numbers on x86_64 and aarch64 (the shared table after 424).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
ABI1_FS = (1 << 13) - 1  # execute .. make_sym
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FILE_ONLY_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def libc() -> ctypes.CDLL:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def syscall(lib: ctypes.CDLL, number: int, *args: object) -> int:
    # syscall() is variadic: plain ints must go as longs or the kernel may see
    # garbage in the upper half of the register.
    wrapped = [ctypes.c_long(arg) if isinstance(arg, int) else arg for arg in args]
    return int(lib.syscall(ctypes.c_long(number), *wrapped))


def abi_version() -> int:
    """The kernel's Landlock ABI, 0 where there is none (old kernel, not enabled, not Linux)."""
    try:
        version = syscall(libc(), SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def handled_fs(abi: int) -> int:
    rights = ABI1_FS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def ruleset_attr(abi: int, scoped: bool = True) -> tuple[RulesetAttr, int]:
    """The attribute struct and the size that this ABI understands."""
    attr = RulesetAttr(handled_fs(abi), NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0, 0)
    size = 8
    if abi >= 4:
        size = 16
    if abi >= 6 and scoped:
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
        size = 24
    return attr, size


def add_path_rule(lib: ctypes.CDLL, ruleset_fd: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this machine does not have needs no rule
    try:
        if not os.path.isdir(path):
            access &= FILE_ONLY_RIGHTS
        rule = PathBeneathAttr(access, fd)
        if syscall(lib, SYS_ADD_RULE, ruleset_fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def restrict(read_paths: list[str], write_paths: list[str], scoped: bool = True) -> int:
    """Confine this process (and anything it could start) for good; returns the ABI used, 0 if none.
    `scoped` (ABI 6) also keeps its signals and abstract sockets inside its own domain: not for the
    runner, whose worker has a domain of its own (the runner's seccomp filter bounds its signals)."""
    abi = abi_version()
    if abi < 1:
        return 0
    lib = libc()
    attr, size = ruleset_attr(abi, scoped)
    ruleset_fd = syscall(lib, SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset_fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path in read_paths:
            add_path_rule(lib, ruleset_fd, path, READ_FILE | READ_DIR)
        for path in write_paths:
            add_path_rule(lib, ruleset_fd, path, handled_fs(abi) & ~EXECUTE)
        # Required before restrict_self for a process without CAP_SYS_ADMIN;
        # for root it still keeps a setuid binary from shedding the rules.
        if lib.prctl(PR_SET_NO_NEW_PRIVS, *(ctypes.c_ulong(arg) for arg in (1, 0, 0, 0))) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
        if syscall(lib, SYS_RESTRICT_SELF, ruleset_fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset_fd)
    return abi
