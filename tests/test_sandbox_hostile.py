"""The hostile sandbox suite (issue 14), over the payloads of hostile_payloads.py.

Held: every layer on (but the Python guards and the static check for all but the gadgets:
module gadgets walk around both, so the kernel layers must stand alone); the payload says it
failed, and the host confirms nothing changed (the root-owned file's mode, owner, times,
xattrs and content, the listening sockets, the sacrificial `sleep` standing in for the
parent, the secret, the disk). Breached: the payload's layers off (FACTORY_SANDBOX_DISABLE),
the same code succeeds and the host sees it, so the held half can fail. Alone: each of a
payload's layers stops it with the others off. The gadgets pass the default static check."""

import asyncio
import contextlib
import ctypes
import os
import platform
import random
import shutil
import socket
import string
import struct
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
from hostile_payloads import DEEP_THROUGH_SYS, KNOWN_LAYERS, LIMITS, PAYLOADS, Payload, forged_success, said

from factory.sandbox import (
    DEFAULT_ALLOWED_IMPORTS,
    SandboxResult,
    check_source,
    run_function,
    run_program,
    sandbox_refusal,
)

pytestmark = [
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the payloads use x86_64 syscall numbers"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the threat is a root parent: run as root (CI does)"),
]
BY_NAME = {payload.name: payload for payload in PAYLOADS}
SWITCHABLE = sorted(payload.name for payload in PAYLOADS if payload.layers)
ALONE = sorted((payload.name, layer) for payload in PAYLOADS if len(payload.layers) > 1 for layer in payload.layers)
DISK_DROP_HELD = 512 << 20  # a held quota run may not take this much of the host's disk


class Host:
    """What the payloads aim at, all created for the test, and the checks that they are untouched."""

    def __init__(self, tmp_path: Path, stack: contextlib.ExitStack):
        self.token = f"hostile-secret-{uuid.uuid4().hex}"
        self.victim, self.secret, self.outside = tmp_path / "victim.db", tmp_path / "secret.txt", tmp_path / "outside"
        planted(self.victim, "the run's store", 0o644)
        os.utime(self.victim, ns=(10**18, 10**18))
        planted(self.secret, self.token, 0o600)
        self.outside.mkdir()
        (tmp_path / "xattr-probe").touch()
        self.xattrs = happens(lambda: os.setxattr(tmp_path / "xattr-probe", "user.probe", b"1"))
        self.before = self.victim_state()
        world = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="factory-hostile-")))
        world.chmod(0o755)  # a socket and a file anyone may reach, as many on a host are
        self.sock_path, self.world_path, self.world_file = tmp_path / "host.sock", world / "world.sock", world / "f"
        planted(self.world_file, self.token, 0o666)
        self.world_link = world / "link"  # a host symlink anyone may look up: its target names a host path
        self.world_link.symlink_to(self.secret)
        self.listeners = {
            "socket": self.unix(stack, str(self.sock_path), 0o600),
            "world_socket": self.unix(stack, str(self.world_path), 0o666),
            "abstract": self.unix(stack, f"\0factory-hostile-{uuid.uuid4().hex}", None),
            "tcp": stack.enter_context(socket.create_server(("127.0.0.1", 0))),
        }
        self.udp = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        self.udp.bind(("127.0.0.1", 0))
        for listener in (*self.listeners.values(), self.udp):
            listener.setblocking(False)
        env = {"PATH": "/usr/bin:/bin", "FACTORY_HOSTILE": self.token}
        self.sleeper = subprocess.Popen(["sleep", "120"], env=env)  # the parent's stand-in
        stack.callback(self.sleeper.wait)
        stack.callback(self.sleeper.kill)
        self.handle = file_handle(self.secret)
        self.keys = dict(zip(("shm_key", "msg_key", "leak_key"), random.sample(range(1 << 24, 1 << 30), 3)))
        self.shm_id = LIBC.shmget(self.keys["shm_key"], 4096, 0o1666)  # IPC_CREAT, as world-writable as some are
        self.msg_id = LIBC.msgget(self.keys["msg_key"], 0o1666)
        stack.callback(self.remove_ipc)
        self.fields = {
            "victim": str(self.victim), "secret": str(self.secret), "outside": str(self.outside),
            "sock": str(self.sock_path), "world_sock": str(self.world_path), "world_file": str(self.world_file),
            "world_link": str(self.world_link),
            "abstract": self.listeners["abstract"].getsockname(), "tcp_port": self.listeners["tcp"].getsockname()[1],
            "udp_port": self.udp.getsockname()[1], "pid": self.sleeper.pid, "addr": self.first_mapping(),
            "hostname": socket.gethostname(), "handle": self.handle or "", **self.keys,
        }  # fmt: skip

    @staticmethod
    def unix(stack, address: str, mode: int | None) -> socket.socket:
        listener = stack.enter_context(socket.socket(socket.AF_UNIX))
        listener.bind(address)
        listener.listen(4)
        if mode is not None:
            os.chmod(address, mode)
        return listener

    def remove_ipc(self) -> None:
        for remove, ipc_id in ((LIBC.shmctl, self.shm_id), (LIBC.msgctl, self.msg_id), (LIBC.shmctl, self.leaked())):
            remove(ipc_id, 0, None)  # IPC_RMID; an id of -1 fails harmlessly

    def shared_memory(self) -> bytes:
        address = LIBC.shmat(self.shm_id, None, 0o10000)  # SHM_RDONLY
        data = ctypes.string_at(address, 7)
        LIBC.shmdt(ctypes.c_void_p(address))
        return data

    def first_mapping(self) -> int:
        return int(Path(f"/proc/{self.sleeper.pid}/maps").read_text().split("-", 1)[0], 16)

    def leaked(self) -> int:
        return LIBC.shmget(self.keys["leak_key"], 0, 0)

    def fill(self, source: str) -> str:
        return string.Template(source).substitute({name: repr(value) for name, value in self.fields.items()})

    def require(self, payload: Payload) -> None:
        if "setxattr" in payload.name and not self.xattrs:
            pytest.skip("this file system has no user xattrs")
        capabilities = int(Path("/proc/self/status").read_text().split("CapEff:")[1].split()[0], 16)
        if "hard rlimit" in payload.name and not capabilities >> 24 & 1:  # CAP_SYS_RESOURCE
            pytest.skip("root here lacks CAP_SYS_RESOURCE: no run could raise a hard limit, held or not")
        if "open_by_handle_at" in payload.name and not self.handle:
            pytest.skip("no file handle for the secret file here (name_to_handle_at, or not on the root mount)")

    def victim_state(self) -> tuple:
        if not self.victim.exists():
            return ("gone",)
        info = self.victim.stat()
        return (info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, self.victim.read_bytes(),
                sorted(os.listxattr(self.victim)) if self.xattrs else None)  # fmt: skip

    def touched(self, payload: Payload, verdict: SandboxResult) -> bool:
        """Whether the host saw the payload's effect."""
        check = payload.host
        if check in self.listeners:
            return happens(lambda: self.listeners[check].accept()[0].close())
        if check == "udp":
            return happens(lambda: self.udp.recv(64))
        if check == "sleeper":  # a signal takes a moment to land
            return happens(lambda: self.sleeper.wait(timeout=2 if said(verdict.stdout)[:1] == ["BREACHED"] else 0.3))
        return {
            "victim": lambda: self.victim_state() != self.before,
            "outside": lambda: any(self.outside.iterdir()),
            "world_file": lambda: self.world_file.read_text() != self.token,
            "sysv_leak": lambda: self.leaked() >= 0,
            "sysv_shm": lambda: self.shared_memory() == b"hostile",
            "sysv_msg": lambda: LIBC.msgrcv(self.msg_id, ctypes.create_string_buffer(64), 56, 0, 0o4000) >= 0,
            "secret": lambda: self.token in verdict.stdout + verdict.stderr,
        }.get(check, lambda: False)()


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.shmat.restype = ctypes.c_void_p


def planted(path: Path, text: str, mode: int) -> None:
    path.write_text(text)
    path.chmod(mode)


def happens(call) -> bool:
    """Whether a non-blocking host-side look finds something."""
    try:
        call()
        return True
    except (BlockingIOError, subprocess.TimeoutExpired, OSError):
        return False


def file_handle(path: Path) -> str | None:
    """name_to_handle_at(path) as hex, for a payload to open by handle from the root mount."""
    buffer, mount_id = ctypes.create_string_buffer(struct.pack("<I", 128), 136), ctypes.c_int()
    if (
        os.stat("/").st_dev != path.stat().st_dev
        or LIBC.name_to_handle_at(-100, str(path).encode(), buffer, ctypes.byref(mount_id), 0) != 0
    ):
        return None
    return buffer.raw[: 8 + struct.unpack_from("<I", buffer.raw)[0]].hex()


@pytest.fixture
def host(tmp_path):
    if refused := sandbox_refusal():
        pytest.skip(f"the sandbox does not run here: {refused}")
    with contextlib.ExitStack() as stack:
        yield Host(tmp_path, stack)


def disabled_for(payload: Payload, off=()) -> list[str]:
    """The knob's value: the Python guards (kernel payloads must hold without them) and `off`."""
    return sorted({*([] if payload.kind == "gadget" else ["python_guards"]), *off})


def run(payload: Payload, host: Host, monkeypatch, off=()) -> tuple[SandboxResult, int]:
    """The payload's verdict with the layers `off` switched off, and how far the host's free
    disk space fell while it ran (sampled every 10 ms)."""
    host.require(payload)
    disabled = disabled_for(payload, off)
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", ",".join(disabled))
    monkeypatch.setenv("FACTORY_SANDBOX_UNCONTAINED", "1" if off else "0")  # layers off: uncontained on purpose
    source, limits = host.fill(payload.source()), LIMITS[payload.kind]
    skip = payload.kind != "gadget"  # the gadgets must pass the static check; the rest may skip it
    free, drop, done = shutil.disk_usage(tempfile.gettempdir()).free, [0], threading.Event()

    def watch_disk():
        while not done.wait(0.01):
            drop[0] = max(drop[0], free - shutil.disk_usage(tempfile.gettempdir()).free)

    watcher = threading.Thread(target=watch_disk, daemon=True)
    watcher.start()
    try:
        verdict = (
            run_function(source, "f", [[]], limits, _skip_static_check=skip)
            if payload.function
            else run_program(source, limits=limits, _skip_static_check=skip)
        )
    finally:
        done.set()
        watcher.join()
    assert isinstance(verdict, SandboxResult)  # never an exception, whatever the code wrote
    if "disabled" in verdict.isolation:  # the knob's own report; a sandbox without the knob has none
        assert sorted(verdict.isolation["disabled"]) == disabled, describe(payload, verdict)
    elif off:
        pytest.skip("factory.sandbox has no FACTORY_SANDBOX_DISABLE knob yet (isolation lists no 'disabled')")
    return verdict, drop[0]


def describe(payload: Payload, verdict: SandboxResult) -> str:
    return (
        f"{payload.name}: status={verdict.status}/{verdict.reason} signal={verdict.signal} "
        f"stdout={verdict.stdout[-300:]!r} error={verdict.error!r} isolation={verdict.isolation}"
    )


def assert_held(payload: Payload, host: Host, verdict: SandboxResult, disk_drop: int = 0) -> None:
    why = describe(payload, verdict)
    if payload.host in ("forge", "deep"):
        assert not forged_success(payload, verdict.status, verdict.calls), why
        assert all(call.status != "ok" for call in verdict.calls), why
        return
    assert said(verdict.stdout)[:1] == ["HELD"] or verdict.signal == "SIGSYS", why
    assert not host.touched(payload, verdict), f"the host saw it: {why}"
    if payload.host == "disk":  # other runs write to this disk too: only the quota runs are judged on it
        assert disk_drop < DISK_DROP_HELD, f"the host's disk lost {disk_drop >> 20} MiB: {why}"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_held_with_every_layer_on(name, host, monkeypatch):
    payload = BY_NAME[name]
    assert_held(payload, host, *run(payload, host, monkeypatch))


@pytest.mark.parametrize("name", SWITCHABLE)
def test_breached_with_its_layers_off(name, host, monkeypatch):
    payload = BY_NAME[name]
    verdict, _ = run(payload, host, monkeypatch, off=payload.layers)
    why = describe(payload, verdict)
    if payload.host == "forge":
        assert forged_success(payload, verdict.status, verdict.calls), why
        return
    assert said(verdict.stdout)[:1] == ["BREACHED"], why
    if payload.host not in (None, "disk"):
        assert host.touched(payload, verdict), f"the payload says BREACHED but the host saw nothing: {why}"


@pytest.mark.parametrize("name, layer", ALONE)
def test_each_of_its_layers_holds_alone(name, layer, host, monkeypatch):
    """Defence in depth, measured: the payload's other layers off, this one still stops it."""
    payload = BY_NAME[name]
    others = [other for other in payload.layers if other != layer]
    verdict, disk_drop = run(payload, host, monkeypatch, off=others)
    if not layer_held(layer, verdict.isolation):  # a kernel or container without it: the verdict says so
        pytest.skip(f"{layer} does not hold on this machine: isolation={verdict.isolation}")
    assert_held(payload, host, verdict, disk_drop)


def layer_held(layer: str, isolation: dict) -> bool:
    """Whether the verdict reports `layer` applied (privileges: nobody, no capabilities; a quota: a tmpfs, not a watch)."""
    value = isolation.get("landlock_abi" if layer == "landlock" else layer)
    if layer == "privileges":
        return isinstance(value, dict) and value.get("uid") == 65534 and value.get("caps_empty") is True
    return isinstance(value, dict) and not value.get("watched") if layer == "scratch_quota" else bool(value)


def test_the_code_tool_and_checker_answer_a_deep_record_with_a_failure(host, monkeypatch):
    """The same finding through the callers, with the code-task profile and its static check."""
    from factory.checks import CODE_LIMITS, CodeTests
    from factory.coa.tools import CodeTool
    from factory.tasks import Task

    monkeypatch.delenv("FACTORY_SANDBOX_DISABLE", raising=False)
    tool = asyncio.run(CodeTool()(DEEP_THROUGH_SYS))
    assert not tool.ok and "[FAILED]" in tool.text, tool.text
    task = Task(id="t/echo", question="print the input", domain="code", source="t",
                tests={"stdin": ["7\n"], "expected_output": ["7\n"]})  # fmt: skip
    checked = CodeTests(limits=CODE_LIMITS).check(f"```python\n{DEEP_THROUGH_SYS}```", task)
    assert (checked.correct, checked.score) == (False, 0.0), checked


@pytest.mark.parametrize("name", [payload.name for payload in PAYLOADS if payload.host == "deep"])
def test_a_deep_record_on_a_reachable_channel_still_gets_a_verdict(name, host, monkeypatch):
    """No layer to switch off here: with the channel reachable, the parent's parser is the defence."""
    payload = BY_NAME[name]
    verdict, _ = run(payload, host, monkeypatch, off=["result_channel"])
    assert_held(payload, host, verdict)


def test_the_table_covers_every_finding_and_the_gadgets_pass_the_static_check():
    findings = {payload.finding for payload in PAYLOADS}
    assert len(PAYLOADS) >= 40 and len(BY_NAME) == len(PAYLOADS)
    assert {"host metadata", "host UNIX sockets", "privileged calls", "module gadgets", "deep record",
            "forged result", "scratch quota"} <= findings  # fmt: skip
    assert all(set(payload.layers) <= KNOWN_LAYERS for payload in PAYLOADS)
    assert [payload.name for payload in PAYLOADS if not payload.layers] == [
        payload.name for payload in PAYLOADS if payload.host == "deep"
    ]
    for gadget in (payload for payload in PAYLOADS if payload.kind == "gadget"):  # they pass the default check
        source = string.Template(gadget.source()).safe_substitute(victim="'/tmp/victim'")
        assert check_source(source, DEFAULT_ALLOWED_IMPORTS) is None, gadget.name
