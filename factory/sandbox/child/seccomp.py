"""A seccomp filter: the child can never start a process, whoever it runs as.

RLIMIT_NPROC does nothing for root, and the Python-level guards can be walked
around by code that reaches ctypes; this filter is what stops a fork bomb for
good. Denied calls fail with an errno, so Python raises a normal OSError:
new processes (fork, vfork, clone without CLONE_THREAD, execve), namespace,
mount and tracing calls, reading or writing another process's memory, taking
its fds (pidfd_getfd), io_uring, sockets other than AF_UNIX, and signals to any
process but this one (kill, tgkill; sigqueue and pidfd signals are denied
outright). With `allow_threads` False, threads are denied too. truncate(2) by
path is denied because Landlock below ABI 3 does not govern it (ftruncate needs
an fd opened for writing, which Landlock does govern).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16
CLONE_THREAD, AF_UNIX = 0x00010000, 1
X32_SYSCALL_BIT = 0x40000000

# name: (audit arch, {syscall: number}); only the calls the filter names.
ARCHES = {
    "x86_64": (0xC000003E, {
        "fork": 57, "vfork": 58, "clone": 56, "clone3": 435, "execve": 59, "execveat": 322,
        "ptrace": 101, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
        "chroot": 161, "io_uring_setup": 425, "process_vm_writev": 311, "bpf": 321, "socket": 41,
        "kill": 62, "tkill": 200, "tgkill": 234, "setsid": 112, "setpgid": 109,
        "process_vm_readv": 310, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_send_signal": 424,
        "pidfd_getfd": 438, "truncate": 76,
    }),
    "aarch64": (0xC00000B7, {
        "clone": 220, "clone3": 435, "execve": 221, "execveat": 281, "ptrace": 117, "unshare": 97,
        "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "io_uring_setup": 425,
        "process_vm_writev": 271, "bpf": 280, "socket": 198, "kill": 129, "tkill": 130, "tgkill": 131,
        "setsid": 157, "setpgid": 154, "process_vm_readv": 270, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "pidfd_send_signal": 424, "pidfd_getfd": 438, "truncate": 45,
    }),
}  # fmt: skip
ALWAYS_DENIED = ("fork", "vfork", "execve", "execveat", "ptrace", "unshare", "setns", "mount", "umount2",
                 "pivot_root", "chroot", "io_uring_setup", "process_vm_writev", "process_vm_readv", "bpf", "tkill",
                 "setsid", "setpgid", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal",
                 "pidfd_getfd", "truncate")  # fmt: skip


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in ARCHES


def insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny(errno_value: int) -> bytes:
    return insn(RET_K, RET_ERRNO | errno_value)


def if_arg0(nr: int, test: int, k: int, on_true: int, on_false: int) -> list[bytes]:
    """For syscall `nr`: look at the low half of its first argument and return
    `on_true` or `on_false`; for any other syscall, fall through."""
    return [
        insn(JEQ_K, nr, 0, 4),  # not this call: skip the four below, the accumulator still holds nr
        insn(LD_W_ABS, OFFSET_ARG0),
        insn(test, k, 0, 1),
        insn(RET_K, on_true),
        insn(RET_K, on_false),
    ]


def program(allow_threads: bool, own_pid: int) -> bytes:
    arch, numbers = ARCHES[platform.machine()]
    code = [
        insn(LD_W_ABS, OFFSET_ARCH),
        insn(JEQ_K, arch, 1, 0),
        insn(RET_K, RET_KILL_PROCESS),  # another ABI (i386 via int 0x80) would dodge the numbers below
        insn(LD_W_ABS, OFFSET_NR),
        insn(JGE_K, X32_SYSCALL_BIT, 0, 1),
        insn(RET_K, RET_KILL_PROCESS),
    ]
    for name in ALWAYS_DENIED:
        if name in numbers:
            code += [insn(JEQ_K, numbers[name], 0, 1), deny(errno.EPERM)]
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes
    # glibc fall back to clone, whose flags it can.
    code += [insn(JEQ_K, numbers["clone3"], 0, 1), deny(errno.ENOSYS)]
    thread_ok = RET_ALLOW if allow_threads else RET_ERRNO | errno.EAGAIN
    code += if_arg0(numbers["clone"], JSET_K, CLONE_THREAD, thread_ok, RET_ERRNO | errno.EPERM)
    code += if_arg0(numbers["socket"], JEQ_K, AF_UNIX, RET_ALLOW, RET_ERRNO | errno.EACCES)
    for name in ("kill", "tgkill"):  # both name the target process first
        code += if_arg0(numbers[name], JEQ_K, own_pid, RET_ALLOW, RET_ERRNO | errno.EPERM)
    code.append(insn(RET_K, RET_ALLOW))
    return b"".join(code)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(allow_threads: bool) -> bool:
    """Load the filter into this process for good; False where seccomp is not available."""
    if not supported():
        return False
    code = program(allow_threads, os.getpid())
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    lib = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong
    if lib.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if lib.prctl(PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(SECCOMP)")
    return True
