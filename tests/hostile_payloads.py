"""The hostile sandbox suite's payloads (issue 14): what each tries, the layers that stop it,
the host-side check. A payload reports on its last stdout line: `HELD <errno>` or `BREACHED
[detail]` (an errno that only a caller past the permission check sees, as reboot(2)'s EINVAL
for an invalid magic, is BREACHED). $fields are the test's Python literals; every target is
the test's own (a root-owned file in tmp_path, a socket, a sacrificial `sleep`), and nothing
harms the machine with a layer off (no valid reboot magic, the current hostname). x86_64."""

import struct
from dataclasses import dataclass

from factory.sandbox import SandboxLimits

PRIV, LL, SC, NET, VIEW = "privileges", "landlock", "seccomp", "network_namespace", "host_view"
# VIEW is in the layers of every payload that names a host path: the host view hides the path too.
CHANNEL, QUOTA = "result_channel", "scratch_quota"
KNOWN_LAYERS = {"static_check", "python_guards", LL, SC, PRIV, QUOTA, CHANNEL, NET, VIEW}
KERNEL_IMPORTS = ("ctypes", "errno", "gc", "io", "json", "os", "socket", "stat", "struct", "sys", "time")
KERNEL_LIMITS = SandboxLimits(cpu_s=5, wall_s=10, allowed_imports=KERNEL_IMPORTS, max_output_bytes=65536)
LIMITS = {
    "kernel": KERNEL_LIMITS,
    "channel": KERNEL_LIMITS,
    "gadget": SandboxLimits(cpu_s=5, wall_s=10),
    "quota": KERNEL_LIMITS.model_copy(update={"cpu_s": 30, "wall_s": 60}),
}  # by Payload.kind
PRELUDE = """import ctypes, os, socket, struct, sys  # before every kernel payload: raw syscalls, the report
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
def sc(nr, *args):
    ret = LIBC.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if ret == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return ret
def report(attack, breached_errnos=()):
    try:
        detail = attack()
    except OSError as exc:
        print("BREACHED" if exc.errno in breached_errnos else "HELD", exc.errno, flush=True)
    else:
        print("BREACHED", "" if detail is None else detail, flush=True)
"""


def tiny_elf(message: bytes) -> bytes:
    """A static x86_64 executable that prints `message`: no file of the host, so only the exec can be refused."""
    code = (b"\xb8\x01\x00\x00\x00\xbf\x01\x00\x00\x00\x48\x8d\x35\x10\x00\x00\x00\xba"
            + struct.pack("<I", len(message)) + b"\x0f\x05\xb8\x3c\x00\x00\x00\x31\xff\x0f\x05" + message)  # fmt: skip
    size, base = 120 + len(code), 0x400000
    hdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01", 2, 62, 1, base + 120, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    return hdr + struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000) + code


@dataclass(frozen=True)
class Payload:
    name: str
    finding: str  # the finding of issue 14 it covers
    layers: tuple[str, ...]  # switched off together, the attack works; () where no knob applies
    code: str  # the attack; kernel payloads define attack() and get PRELUDE and the report line
    host: str | None = None  # the host-side check (Host.touched), or forge | deep | disk
    kind: str = "kernel"  # kernel | gadget (default limits, static check on) | channel | quota
    breached_errnos: tuple[int, ...] = ()
    function: bool = False  # run with run_function instead of run_program

    def source(self) -> str:
        if not self.code.startswith("def attack():"):
            return self.code
        return f"{PRELUDE}\n{self.code}\nreport(attack, {self.breached_errnos!r})\n"


def k(name, finding, layers, body, host=None, errnos=(), **extra) -> Payload:
    """A kernel payload whose attack() is `body` (one statement per line)."""
    code = "def attack():\n" + "".join(f"    {line}\n" for line in body.strip().splitlines())
    return Payload(name, finding, layers, code, host, breached_errnos=errnos, **extra)


META, SOCKETS, MACHINE = "host metadata", "host UNIX sockets", "privileged calls"
PROCS, NETWORK, FILES, OTHERS = "processes", "network", "files outside scratch", "other processes"
ESCAPE, KERNEL, SYSV = "namespaces and ids", "kernel interfaces", "host SysV IPC"
HIDDEN = "unmediated or uncounted (issue 31)"
CAPSET = "return sc(126, (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)(1 << 21, 1 << 21, 0, 0, 0, 0))"
FORK_LIKE = "if pid == 0:\n    sc(60, 0)\nos.waitpid(pid, 0)\nreturn pid"
SPAWN = """pid, argv = ctypes.c_int(0), (ctypes.c_char_p * 3)(b"echo", b"spawned", None)
err = LIBC.posix_spawn(ctypes.byref(pid), b"/bin/echo", None, None, argv, None)
if err:
    raise OSError(err, os.strerror(err))
os.waitpid(pid.value, 0)"""
MEMFD_EXEC = f"""fd = os.memfd_create("hostile")
os.write(fd, bytes.fromhex({tiny_elf(b"BREACHED memfd exec" + bytes([10])).hex()!r}))
argv = (ctypes.c_char_p * 2)(b"x", None)
return sc(322, fd, b"", argv, None, 0x1000)"""

KERNEL_PAYLOADS = [
    # --- the child could change any host file's metadata (issue 14, first finding)
    k("chmod a host file", META, (SC, PRIV, VIEW), "os.chmod($victim, 0)", "victim"),
    k("chown a host file", META, (SC, PRIV, VIEW), "os.chown($victim, 65534, 65534)", "victim"),
    k("utime a host file", META, (SC, PRIV, VIEW), "os.utime($victim, (0, 0))", "victim"),
    k("utimensat(NULL) a host file", META, (SC, PRIV, VIEW), "sc(280, -100, $victim.encode(), None, 0)", "victim"),
    k("setxattr a host file", META, (SC, PRIV, VIEW), "os.setxattr($victim, 'user.hostile', b'1')", "victim"),
    k(
        "fchmodat2 through an O_PATH fd",
        META,
        (SC, PRIV, VIEW),
        "fd = os.open($victim, os.O_PATH)\nsc(452, fd, b'', 0o777, 0x1000)",
        "victim",
    ),
    # --- host UNIX sockets, by path and in the abstract namespace
    k(
        "connect a host UNIX socket (0700 dir)",
        SOCKETS,
        (SC, PRIV, VIEW),
        "s = socket.socket(socket.AF_UNIX)\ns.connect($sock)\ns.send(b'hostile')",
        "socket",
    ),
    k(
        "connect a world-writable host UNIX socket",
        SOCKETS,
        (SC, VIEW),
        "s = socket.socket(socket.AF_UNIX)\ns.connect($world_sock)\ns.send(b'hostile')",
        "world_socket",
    ),
    k(
        "connect an abstract UNIX socket",
        SOCKETS,
        (SC, LL, NET),
        "s = socket.socket(socket.AF_UNIX)\ns.connect($abstract)\ns.send(b'hostile')",
        "abstract",
    ),
    # --- calls that need a privilege the child should not have
    k("reboot(2) with an invalid magic", MACHINE, (SC, PRIV), "sc(169, 0, 0, 0, 0)", errnos=(22,)),
    k("sethostname to the current name", MACHINE, (SC, PRIV), "sc(170, $hostname.encode(), len($hostname))"),
    k("syslog SIZE_BUFFER", MACHINE, (SC, PRIV), "return sc(103, 10, None, 0)"),
    k("syslog READ_ALL", MACHINE, (SC, PRIV), "buf = ctypes.create_string_buffer(4096)\nreturn sc(103, 3, buf, 4096)"),
    k("fanotify_init", MACHINE, (SC, PRIV), "return sc(300, 0, 0)"),
    # --- issue 31: what Landlock does not mediate and the memory limit does not count
    k(
        "memfd_create holds memory outside memory_mb",
        HIDDEN,
        (SC,),
        "fd = os.memfd_create('hostile')\nos.write(fd, b'x' * (1 << 20))\nreturn 'a memfd holds 1 MiB'",
    ),
    k(
        "inotify watch on a world-readable host folder",
        HIDDEN,
        (SC, VIEW),
        "fd = sc(294, 0)\nreturn sc(254, fd, os.path.dirname($world_file).encode(), 0x100)",
    ),
    k("pidfd_open the parent", HIDDEN, (SC,), "return sc(434, sc(110), 0)"),
    k("sched_setaffinity to one core", HIDDEN, (SC,), "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})"),
    k(
        "stat a world-readable host file",
        HIDDEN,
        (VIEW,),
        "info = os.stat($world_file)\nreturn (info.st_size, info.st_mtime)",
    ),
    k("readlink a host symlink", HIDDEN, (VIEW,), "return os.readlink($world_link)"),
    k(
        "sched_setscheduler SCHED_FIFO on itself",
        MACHINE,
        (SC, PRIV),
        "os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))\n"
        "os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))",
    ),
    k("setpriority to a negative nice", MACHINE, (SC, PRIV), "os.setpriority(os.PRIO_PROCESS, 0, -5)"),
    k("ioprio_set to the real-time class", MACHINE, (SC, PRIV), "sc(251, 1, 0, (1 << 13) | 4)"),
    # --- new processes and exec
    k("fork(2)", PROCS, (SC,), "pid = sc(57)\n" + FORK_LIKE),
    k("clone(2) without CLONE_THREAD", PROCS, (SC,), "pid = sc(56, 17, 0, 0, 0, 0)\n" + FORK_LIKE),
    k(
        "clone3(2)",
        PROCS,
        (SC,),
        "args = ctypes.create_string_buffer(struct.pack('<11Q', 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))\n"
        "pid = sc(435, args, 88)\n" + FORK_LIKE,
    ),
    k(
        "execve /bin/echo",
        PROCS,
        (SC, LL, VIEW),
        "argv = (ctypes.c_char_p * 3)(b'echo', b'BREACHED execve', None)\nsc(59, b'/bin/echo', argv, None)",
    ),
    k("posix_spawn /bin/echo", PROCS, (SC, LL, VIEW), SPAWN),
    k("memfd_create + execveat", PROCS, (SC,), MEMFD_EXEC),
    # --- the network
    k("AF_INET socket", NETWORK, (SC,), "socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()"),
    k("AF_INET6 socket", NETWORK, (SC,), "socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()"),
    k("AF_NETLINK socket", NETWORK, (SC,), "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()"),
    k("AF_PACKET raw socket", NETWORK, (SC, PRIV), "socket.socket(17, socket.SOCK_RAW, 0).close()"),
    k(
        "TCP connect to a host listener",
        NETWORK,
        (SC, LL, NET),
        "s = socket.create_connection(('127.0.0.1', $tcp_port), timeout=2)\ns.send(b'hostile')",
        "tcp",
    ),
    k(
        "UDP sendto a host socket",
        NETWORK,
        (SC, NET),
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'hostile', ('127.0.0.1', $udp_port))",
        "udp",
    ),
    # --- files outside the scratch directory
    k(
        "write a file outside scratch",
        FILES,
        (LL, PRIV, VIEW),
        "fd = os.open($outside + '/written', os.O_WRONLY | os.O_CREAT, 0o644)\nos.write(fd, b'hostile')",
        "outside",
    ),
    k("rename a host file", FILES, (LL, PRIV, VIEW), "os.rename($victim, $outside + '/renamed')", "victim"),
    k("hard-link a host file", FILES, (LL, PRIV, VIEW), "os.link($victim, $outside + '/linked')", "outside"),
    k(
        "symlink outside scratch",
        FILES,
        (LL, PRIV, VIEW),
        "os.symlink('/etc/passwd', $outside + '/symlink')",
        "outside",
    ),
    k("unlink a host file", FILES, (LL, PRIV, VIEW), "os.unlink($victim)", "victim"),
    k(
        "write a world-writable host file",
        FILES,
        (LL, VIEW),
        "fd = os.open($world_file, os.O_WRONLY | os.O_APPEND)\nos.write(fd, b'hostile')",
        "world_file",
    ),
    k("read a world-readable host file", FILES, (LL, VIEW), "return open($world_file).read()", "secret"),
    k("read the job file beside scratch", FILES, (LL, PRIV, VIEW), "return len(open('../job.json').read())"),
    k("truncate(2) a host file by path", FILES, (SC, LL, PRIV, VIEW), "os.truncate($victim, 0)", "victim"),
    k(
        "read a secret file",
        FILES,
        (LL, PRIV, VIEW),
        "fd = os.open($secret, os.O_RDONLY)\nreturn os.read(fd, 200).decode()",
        "secret",
    ),
    k(
        "open_by_handle_at a secret file",
        FILES,
        (SC, PRIV, LL),
        "mount_fd = os.open('/', os.O_RDONLY | os.O_DIRECTORY)\n"
        "handle = ctypes.create_string_buffer(bytes.fromhex($handle))\n"
        "return os.read(sc(304, mount_fd, handle, os.O_RDONLY), 200).decode()",
        "secret",
    ),
    # --- other processes: a sacrificial sleep stands in for the parent
    k("kill(2) the parent", OTHERS, (SC, LL, PRIV), "sc(62, $pid, 15)", "sleeper"),
    k("tgkill(2) the parent", OTHERS, (SC, LL, PRIV), "sc(234, $pid, $pid, 15)", "sleeper"),
    k("signal 0 to the runner (its parent)", OTHERS, (SC, LL, PRIV), "sc(62, os.getppid(), 0)"),
    k("signal 0 to pid 1", OTHERS, (SC, LL, PRIV), "sc(62, 1, 0)"),
    k("ptrace(PTRACE_SEIZE) the parent", OTHERS, (SC, LL, PRIV), "sc(101, 0x4206, $pid, 0, 0)"),
    k(
        "process_vm_readv the parent",
        OTHERS,
        (SC, LL, PRIV),
        "buf = ctypes.create_string_buffer(8)\nlocal = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)\n"
        "remote = (ctypes.c_void_p * 2)($addr, 8)\nreturn sc(310, $pid, local, 1, remote, 1, 0)",
    ),
    k(
        "read /proc/<parent>/environ",
        OTHERS,
        (LL, PRIV),
        "fd = os.open(f'/proc/{$pid}/environ', os.O_RDONLY)\nreturn os.read(fd, 4096).decode()",
        "secret",
    ),
    k(
        "read /proc/<parent>/mem",
        OTHERS,
        (LL, PRIV),
        "fd = os.open(f'/proc/{$pid}/mem', os.O_RDONLY)\nreturn os.pread(fd, 8, $addr).hex()",
    ),
    k("ptrace(PTRACE_SEIZE) the runner", OTHERS, (SC, LL, PRIV), "sc(101, 0x4206, os.getppid(), 0, 0)"),
    k("list the runner's fds in /proc", OTHERS, (LL, PRIV), "return os.listdir(f'/proc/{os.getppid()}/fd')"),
    k("pidfd_getfd the parent's stdout", OTHERS, (SC, LL, PRIV), "return sc(438, sc(434, $pid, 0), 1, 0)"),
    # --- System V IPC lives in the host's IPC namespace: objects outlive the run, and others' are reachable
    k(
        "leave a SysV shared memory segment behind",
        SYSV,
        (SC,),
        "return sc(29, $leak_key, 1 << 20, 0o1600)",
        "sysv_leak",
    ),
    k(
        "write a host's SysV shared memory",
        SYSV,
        (SC,),
        "ctypes.memmove(sc(30, sc(29, $shm_key, 0, 0), None, 0), b'hostile', 7)",
        "sysv_shm",
    ),
    k(
        "send to a host's SysV message queue",
        SYSV,
        (SC,),
        "sc(69, sc(68, $msg_key, 0), ctypes.create_string_buffer(struct.pack('<q', 1) + b'hostile'), 7, 0o4000)",
        "sysv_msg",
    ),
    # --- namespaces, ids, capabilities
    k(
        "mount(2) an unknown file system",
        ESCAPE,
        (SC, PRIV, LL),
        "sc(165, b'none', b'.', b'hostile-no-such-fs', 0, None)",
        errnos=(19,),
    ),  # ENODEV: past the permission check
    k("unshare(CLONE_NEWUTS)", ESCAPE, (SC, PRIV), "sc(272, 0x04000000)"),
    k("unshare(CLONE_NEWUSER)", ESCAPE, (SC,), "sc(272, 0x10000000)"),
    k("setns into its own UTS namespace", ESCAPE, (SC, PRIV), "sc(308, sc(434, os.getpid(), 0), 0x04000000)"),
    k("chroot(2) into scratch", ESCAPE, (SC, PRIV), "sc(161, b'.')"),
    k(
        "raise a hard rlimit (prlimit64 on itself)",
        ESCAPE,
        (PRIV,),
        "sc(302, 0, 7, ctypes.create_string_buffer(struct.pack('<QQ', 64, 1 << 20)), None)",
    ),
    k("setuid(0) after the drop", ESCAPE, (SC, PRIV), "os.setuid(0)"),
    k("setgid(0) after the drop", ESCAPE, (SC, PRIV), "os.setgid(0)"),
    k("capset CAP_SYS_ADMIN", ESCAPE, (SC, PRIV), CAPSET),
    # --- kernel interfaces
    k("swapoff a missing path", KERNEL, (SC, PRIV), "sc(168, b'/hostile-no-such-swap')", errnos=(2,)),
    k(
        "a thread while threads are off",
        PROCS,
        (SC,),
        "t = ctypes.c_ulong()\nerr = LIBC.pthread_create(ctypes.byref(t), None, LIBC.getpid, None)\n"
        "if err:\n    raise OSError(err, os.strerror(err))\nLIBC.pthread_join(t, None)",
    ),
    k("keyctl(2)", KERNEL, (SC,), "return sc(250, 0, -4, 1)"),
    k(
        "bpf(BPF_MAP_CREATE)",
        KERNEL,
        (SC, PRIV),
        "attr = ctypes.create_string_buffer(struct.pack('<5I', 2, 4, 4, 1, 0), 72)\nreturn sc(321, 0, attr, 72)",
    ),
    k("io_uring_setup", KERNEL, (SC,), "return sc(425, 1, ctypes.create_string_buffer(120))"),
    k(
        "perf_event_open",
        KERNEL,
        (SC,),
        "attr = ctypes.create_string_buffer(struct.pack('<IIQQQQQ', 1, 128, 0, 0, 0, 0, 0b1100001), 128)\n"
        "return sc(298, attr, 0, -1, -1, 0)",
    ),
    k("mknod a character device in scratch", KERNEL, (SC, PRIV), "os.mknod('hostile-null', 0o20600, os.makedev(1, 3))"),
    k("userfaultfd (user mode only)", KERNEL, (SC,), "return sc(323, 0o2000000 | 1)"),
    k("personality(ADDR_NO_RANDOMIZE)", KERNEL, (SC,), "return sc(135, 0x0040000)"),
]

# --- the Python layers are no boundary: gadgets the static check lets through (default limits)
GADGET_PAYLOADS = [
    Payload(
        "gadget: dataclasses.builtins.getattr(B, 'open')",
        "module gadgets",
        (LL, PRIV, VIEW),
        "import dataclasses\nB = dataclasses.builtins\nreal_open = B.getattr(B, 'open')\n"
        "try:\n    real_open($victim, 'a').write('hostile')\n    print('BREACHED')\n"
        "except OSError as exc:\n    print('HELD', exc.errno)\n",
        "victim",
        kind="gadget",
    ),
    Payload(
        "gadget: fractions.sys.modules['os'].chmod",
        "module gadgets",
        (SC, PRIV, VIEW),
        "import fractions\ntry:\n    fractions.sys.modules['os'].chmod($victim, 0)\n    print('BREACHED')\n"
        "except OSError as exc:\n    print('HELD', exc.errno)\n",
        "victim",
        kind="gadget",
    ),
    Payload(
        "gadget: sys.modules['importlib'].import_module('ctypes') reboots",
        "module gadgets",
        (SC, PRIV),
        "import datetime\nct = datetime.sys.modules['importlib'].import_module('ctypes')\n"
        "libc = ct.CDLL(None, use_errno=True)\nlibc.syscall.restype = ct.c_long\n"
        "ret = libc.syscall(ct.c_long(169), ct.c_long(0), ct.c_long(0), ct.c_long(0), ct.c_long(0))\n"
        "print('BREACHED' if ret == 0 or ct.get_errno() == 22 else 'HELD', ct.get_errno())\n",
        kind="gadget",
    ),
]

# --- the result channel: forged and absurd records, in the runner's line format and framed
# (a 4-byte big-endian length before each JSON object), written to every descriptor.
WRITE_EVERY_FD = """import gc, io, json, os, struct, sys, time
def to_every_fd(messages):  # framed first (a line reader skips that as one bad line), then as lines
    framed = b"".join(struct.pack(">I", len(m)) + m for m in messages) + b"\\n"
    for blob in (framed, b"".join(m + b"\\n" for m in messages)):
        for fd in range(3, 1024):
            try:
                os.write(fd, blob)
            except OSError:
                pass
"""
FORGED_CALLS = (
    '[b\'{"kind": "calls"}\', b\'{"kind": "call", "index": 0, "status": "ok", "value_json": "42"}\', '
    'b\'{"kind": "end", "status": "ok"}\']'
)
DEEP = "b'[' * 30000 + b']' * 30000"  # 60 KB: under a frame cap of 80 KiB, far past json's recursion
SANDBOX_WRITERS = """def result_files():  # where the code shares the runner's process: its open result file
    found = []
    for obj in gc.get_objects():
        try:
            found += [obj] if isinstance(obj, io.TextIOBase) and obj.fileno() > 2 and obj.writable() else []
        except Exception:
            pass
    return found
FILES, RUNNER, CHANNEL = result_files(), sys.modules['runner'], sys.modules['channel']
for message in FORGED:  # paced: each reply lands after the runner has asked, unread
    for target in FILES or range(3, 64):
        try:
            (RUNNER.write if FILES else CHANNEL.send)(target, json.loads(message))
        except Exception:
            pass
    time.sleep(0.2)
"""
CHANNEL_PAYLOADS = [
    Payload(
        "forged call records, then os._exit(0)",
        "forged result",
        (CHANNEL,),
        f"{WRITE_EVERY_FD}FORGED = {FORGED_CALLS}\nto_every_fd(FORGED)\nos._exit(0)\ndef f():\n    return 0\n",
        "forge",
        kind="channel",
        function=True,
    ),
    Payload(
        "forged records through the sandbox's own writers",
        "forged result",
        (CHANNEL,),
        f"{WRITE_EVERY_FD}FORGED = {FORGED_CALLS}\n{SANDBOX_WRITERS}os._exit(0)\ndef f():\n    return 0\n",
        "forge",
        kind="channel",
        function=True,
    ),
    Payload(
        "a record nested 30000 deep (program)",
        "deep record",
        (),
        f'{WRITE_EVERY_FD}to_every_fd([b\'{{"kind": "end", "status": "ok", "x": \' + {DEEP} + b\'}}\'])\nos._exit(0)\n',
        "deep",
        kind="channel",
    ),
    Payload(
        "a call value nested 30000 deep (function)",
        "deep record",
        (),
        f'{WRITE_EVERY_FD}to_every_fd([b\'{{"kind": "calls"}}\', b\'{{"kind": "call", "index": 0, '
        f'"status": "ok", "value_json": "\' + {DEEP} + b\'"}}\'])\n'
        "os._exit(0)\ndef f():\n    return 0\n",
        "deep",
        kind="channel",
        function=True,
    ),
]

# The deep record again, as code-task code (sys is allowed there, os is not): for the code tool and checker.
DEEP_THROUGH_SYS = f"""import sys
OS = sys.modules['os']  # the real os, through the allowed sys
DEEP = b'{{"kind": "end", "status": "ok", "x": ' + {DEEP} + b'}}'
for fd in range(3, 1024):
    for blob in (len(DEEP).to_bytes(4, 'big') + DEEP + bytes([10]), DEEP + bytes([10])):
        try:
            OS.write(fd, blob)
        except OSError:
            pass
OS._exit(0)
"""

# --- scratch space: bounded, with a clean verdict, off the host's disk
QUOTA_PAYLOADS = [
    k(
        "write 1 GiB into scratch in 8 MiB files",
        "scratch quota",
        (QUOTA,),
        "written = 0\nwhile written < 1 << 30:\n    fd = os.open(f'f{written}', os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "    written += os.write(fd, b'x' * (8 << 20))\n    os.close(fd)\nreturn written",
        "disk",
        kind="quota",
    ),
    k(
        "create 100000 files in scratch",
        "scratch quota",
        (QUOTA,),
        "for made in range(100000):\n    os.close(os.open(str(made), os.O_WRONLY | os.O_CREAT, 0o600))\nreturn 100000",
        "disk",
        kind="quota",
    ),
]

PAYLOADS = [*KERNEL_PAYLOADS, *GADGET_PAYLOADS, *CHANNEL_PAYLOADS, *QUOTA_PAYLOADS]


def said(stdout: str) -> list[str]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return lines[-1].split() if lines else []


def forged_success(payload: Payload, status: str, calls: list) -> bool:
    """Whether a forge payload got what it forged: an ok run (and call 0 ok with 42)."""
    return status == "ok" and (not payload.function or [(c.status, c.value) for c in calls] == [("ok", 42)])
