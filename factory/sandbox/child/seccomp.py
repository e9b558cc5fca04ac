"""A seccomp filter (a denylist): what neither Landlock nor the dropped privileges stop.

RLIMIT_NPROC does nothing for root, and the Python-level guards can be walked
around by code that reaches ctypes; this filter is what stops a fork bomb for
good. Denied calls fail with EPERM, so Python raises a normal PermissionError:
- new processes (fork, vfork, clone without CLONE_THREAD, execve), namespaces,
  mounts (old and new API), tracing, another process's memory, its fds
  (pidfd_getfd), io_uring, signals to any process but this one (and, for the
  runner, its worker), sigqueue and pidfd signals;
- socket() of every family (socketpair stays: asyncio needs it), so no UNIX
  socket can reach a path on the host;
- metadata: chmod, chown, utime(s), xattrs — Landlock does not govern them;
- the machine: reboot, host and domain names, the kernel log, fanotify,
  real-time scheduling and priorities, keys, perf, modules, kexec, accounting,
  swap, quotas, clocks, port I/O, device nodes, file handles, userfaultfd,
  personality, and changing ids or capabilities after the drop;
- SysV IPC (shm, sem, msg) and POSIX message queues: the host's objects are
  reachable by key from any namespace-less process with the right mode;
- truncate(2) by path, which Landlock below ABI 3 does not govern (ftruncate
  needs an fd opened for writing, which Landlock does govern);
- issue 31: memfd_create (its pages are shared memory that RLIMIT_AS does not
  count: 944 MiB held past memory_mb), inotify (Landlock does not mediate it:
  a watch on a world-readable host folder listed the files a host process made
  there), pidfd_open (a handle on the parent), sched_setaffinity.
A denylist, not an allowlist: numpy, sympy and the standard library touch many
calls that differ across glibc and kernel versions, and a missing one would be a
false error on a correct program. The calls above are every finding of issue 14
plus the usual dangerous set; anything new that matters goes here.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16
CLONE_THREAD = 0x00010000
X32_SYSCALL_BIT = 0x40000000

# Numbers from 424 up are the same on every architecture.
SHARED = {
    "pidfd_send_signal": 424, "io_uring_setup": 425, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440,
    "mount_setattr": 442, "quotactl_fd": 443, "memfd_secret": 447, "fchmodat2": 452, "setxattrat": 463,
    "removexattrat": 466, "open_tree_attr": 467, "pidfd_open": 434,
}  # fmt: skip
ARCHES = {
    "x86_64": (0xC000003E, {**SHARED,
        "fork": 57, "vfork": 58, "clone": 56, "execve": 59, "execveat": 322, "ptrace": 101, "unshare": 272,
        "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "process_vm_writev": 311,
        "process_vm_readv": 310, "bpf": 321, "socket": 41, "kill": 62, "tkill": 200, "tgkill": 234,
        "setsid": 112, "setpgid": 109, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "truncate": 76,
        "prlimit64": 302, "chmod": 90, "fchmod": 91, "fchmodat": 268, "chown": 92, "fchown": 93, "lchown": 94,
        "fchownat": 260, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261, "setxattr": 188,
        "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
        "reboot": 169, "sethostname": 170, "setdomainname": 171, "syslog": 103, "fanotify_init": 300,
        "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314, "setpriority": 141,
        "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279, "keyctl": 250, "add_key": 248,
        "request_key": 249, "perf_event_open": 298, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "acct": 163, "swapon": 167,
        "swapoff": 168, "quotactl": 179, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305,
        "adjtimex": 159, "iopl": 172, "ioperm": 173, "mknod": 133, "mknodat": 259, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "userfaultfd": 323, "personality": 135, "setuid": 105, "setgid": 106,
        "setreuid": 113, "setregid": 114, "setresuid": 117, "setresgid": 119, "setgroups": 116, "setfsuid": 122,
        "setfsgid": 123, "capset": 126, "lookup_dcookie": 212, "vhangup": 153, "kcmp": 312, "uselib": 134,
        "ustat": 136, "sysfs": 139, "_sysctl": 156, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67,
        "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
        "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "memfd_create": 319, "sched_setaffinity": 203,
        "inotify_init": 253, "inotify_init1": 294, "inotify_add_watch": 254,
    }),
    "aarch64": (0xC00000B7, {**SHARED,
        "clone": 220, "execve": 221, "execveat": 281, "ptrace": 117, "unshare": 97, "setns": 268, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "process_vm_writev": 271, "process_vm_readv": 270,
        "bpf": 280, "socket": 198, "kill": 129, "tkill": 130, "tgkill": 131, "setsid": 157, "setpgid": 154,
        "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240, "truncate": 45, "prlimit64": 261, "fchmod": 52,
        "fchmodat": 53, "fchown": 55, "fchownat": 54, "utimensat": 88, "setxattr": 5, "lsetxattr": 6,
        "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16, "reboot": 142,
        "sethostname": 161, "setdomainname": 162, "syslog": 116, "fanotify_init": 262, "sched_setscheduler": 119,
        "sched_setparam": 118, "sched_setattr": 274, "setpriority": 140, "ioprio_set": 30, "migrate_pages": 238,
        "move_pages": 239, "keyctl": 219, "add_key": 217, "request_key": 218, "perf_event_open": 241,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
        "acct": 89, "swapon": 224, "swapoff": 225, "quotactl": 60, "settimeofday": 170, "clock_settime": 112,
        "clock_adjtime": 266, "adjtimex": 171, "mknodat": 33, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "userfaultfd": 282, "personality": 92, "setuid": 146, "setgid": 144, "setreuid": 145, "setregid": 143,
        "setresuid": 147, "setresgid": 149, "setgroups": 159, "setfsuid": 151, "setfsgid": 152, "capset": 91,
        "lookup_dcookie": 18, "vhangup": 58, "kcmp": 272, "msgget": 186, "msgctl": 187, "msgrcv": 188,
        "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193, "shmget": 194,
        "shmctl": 195, "shmat": 196, "shmdt": 197, "mq_open": 180, "mq_unlink": 181, "memfd_create": 279,
        "sched_setaffinity": 122, "inotify_init1": 26, "inotify_add_watch": 27,
    }),
}  # fmt: skip
# Every named call but the ones with a rule of their own below (an arch lacking a name has no such call).
RULED = ("clone", "clone3", "kill", "tgkill", "prlimit64")
ALWAYS_DENIED = tuple(name for name in ARCHES["x86_64"][1] if name not in RULED)


def machine() -> str:
    # os.uname, not the platform module: that import costs the sandbox child ~2 ms per run
    return os.uname().machine


def supported() -> bool:
    return os.uname().sysname == "Linux" and machine() in ARCHES


def insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def deny(errno_value: int) -> bytes:
    return insn(RET_K, RET_ERRNO | errno_value)


def if_arg0_in(nr: int, allowed: tuple[int, ...], on_false: int) -> list[bytes]:
    """For syscall `nr`: allow it when the low half of its first argument is one of
    `allowed`, else return `on_false`; for any other syscall, fall through."""
    n = len(allowed)
    code = [insn(JEQ_K, nr, 0, n + 3), insn(LD_W_ABS, OFFSET_ARG0)]  # not this call: skip all n + 3 below
    code += [insn(JEQ_K, value, n - i, 0) for i, value in enumerate(allowed)]  # jump to the allow below
    code += [insn(RET_K, on_false), insn(RET_K, RET_ALLOW)]
    return code


def if_arg0_has(nr: int, bits: int, on_true: int, on_false: int) -> list[bytes]:
    """For syscall `nr`: `on_true` when its first argument has any of `bits`, else `on_false`."""
    return [insn(JEQ_K, nr, 0, 4), insn(LD_W_ABS, OFFSET_ARG0), insn(JSET_K, bits, 0, 1),
            insn(RET_K, on_true), insn(RET_K, on_false)]  # fmt: skip


def program(allow_threads: bool, signal_targets: tuple[int, ...]) -> bytes:
    arch, numbers = ARCHES[machine()]
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
    code += if_arg0_has(numbers["clone"], CLONE_THREAD, thread_ok, RET_ERRNO | errno.EPERM)
    for name in ("kill", "tgkill"):  # both name the target process first
        code += if_arg0_in(numbers[name], signal_targets, RET_ERRNO | errno.EPERM)
    # Its own limits (pid 0 or its own pid) only: another sandbox runs as the same user.
    code += if_arg0_in(numbers["prlimit64"], (0, signal_targets[0]), RET_ERRNO | errno.EPERM)
    code.append(insn(RET_K, RET_ALLOW))
    return b"".join(code)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(allow_threads: bool, also_signal: tuple[int, ...] = ()) -> bool:
    """Load the filter into this process for good; False where seccomp is not available.
    Signals may go to this process and to `also_signal` (the runner's worker)."""
    if not supported():
        return False
    code = program(allow_threads, (os.getpid(), *also_signal))
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    lib = ctypes.CDLL(None, use_errno=True)
    ulong = ctypes.c_ulong
    if lib.prctl(PR_SET_NO_NEW_PRIVS, ulong(1), ulong(0), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if lib.prctl(PR_SET_SECCOMP, ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ulong(0), ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(SECCOMP)")
    return True
