"""An adversarial review of the hardened sandbox (issue 14): what hostile code tries with
every kernel layer on. The static check and the Python guards are left out (module gadgets
walk around both, see test_sandbox_hostile.py), so each attack meets the kernel layers,
the runner/worker split and the parent alone. The host is checked where the attack aims
at it: only files and processes this test creates are looked at."""

import asyncio
import os
import platform
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from factory.sandbox import SandboxLimits, arun_function, arun_program, run_function, run_program, sandbox_refusal

pytestmark = [
    pytest.mark.skipif(platform.system() != "Linux", reason="the sandbox's kernel layers are Linux's"),
    pytest.mark.skipif(os.geteuid() != 0, reason="the threat is a root parent: run as root (CI does)"),
]
LIMITS = SandboxLimits(wall_s=4)
# The worker's end of the channel: the one pipe it can write to (stdout and stderr are 1 and 2).
FIND_PIPE = """
import os, stat, struct, time
def channel_fd():
    for fd in range(3, 64):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, b"")
                return fd
        except OSError:
            continue
def send(body):
    os.write(channel_fd(), struct.pack(">I", len(body)) + body)
"""


@pytest.fixture(autouse=True)
def kernel_layers_only(monkeypatch):
    refused = sandbox_refusal()
    if refused:
        pytest.skip(f"the sandbox does not run here: {refused}")
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "static_check,python_guards")


def held(verdict) -> dict:
    isolation = verdict.isolation
    return {
        "landlock": isolation.get("landlock_abi", 0) > 0,
        "seccomp": isolation.get("seccomp") is True,
        "channel": isolation.get("result_channel") is True,
    }


def test_function_mode_ok_end_before_the_calls_is_tampered():
    """Finding: the module wrote {"kind": "end", "status": "ok"} and exited 0 before any call
    ran; the runner wrote it as the run's end, and the verdict said `ok` for work not done."""
    source = FIND_PIPE + 'send(b\'{"kind": "end", "status": "ok"}\')\nos._exit(0)\ndef f(x):\n    return x\n'
    verdict = run_function(source, "f", [[1], [2]], LIMITS, _skip_static_check=True)
    assert held(verdict) == {"landlock": True, "seccomp": True, "channel": True}
    assert (verdict.status, verdict.reason) == ("error", "tampered"), verdict
    assert [call.status for call in verdict.calls] == ["error", "error"]


def test_a_real_module_failure_before_the_calls_still_reads_as_its_own_error():
    verdict = run_function("raise ValueError('no')\ndef f():\n    return 1\n", "f", [[]], LIMITS)
    assert (verdict.status, verdict.reason) == ("error", "exception")
    missing = run_function("x = 1\n", "f", [[]], LIMITS)
    assert (missing.status, missing.reason) == ("error", "missing_function")


def test_the_worker_holds_no_descriptor_but_its_stdio_and_two_pipes():
    source = (
        "import os, stat\nfor fd in range(64):\n    try:\n        mode = os.fstat(fd).st_mode\n"
        "    except OSError:\n        continue\n"
        "    print(fd, stat.S_ISFIFO(mode), stat.S_ISCHR(mode))\n"
    )
    verdict = run_program(source, limits=LIMITS, _skip_static_check=True)
    assert verdict.ok, verdict
    rows = [line.split() for line in verdict.stdout.splitlines()]
    assert rows[0] == ["0", "False", "True"]  # /dev/null
    assert [fd for fd, *_ in rows] == ["0", "1", "2", rows[3][0], rows[4][0]] and len(rows) == 5
    assert all(fifo == "True" for _, fifo, _ in rows[1:])  # no file, no socket: the result file was closed


@pytest.mark.parametrize("directory", ["/dev/shm", "/tmp", "/var/tmp", "/run", "/proc/self/root/tmp"])
def test_no_write_outside_scratch(directory):
    name = f"sandbox-review-{uuid.uuid4().hex}"
    host_path = os.path.join(directory.replace("/proc/self/root", ""), name)
    source = (
        f"try:\n    open({os.path.join(directory, name)!r}, 'w').write('x')\n    print('wrote')\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    try:
        verdict = run_program(source, limits=LIMITS, _skip_static_check=True)
        # Landlock refuses the write, or the host view has no such folder to write in
        assert verdict.ok and verdict.stdout.strip() in ("PermissionError", "FileNotFoundError"), verdict
        assert not os.path.lexists(host_path)
    finally:
        if os.path.lexists(host_path):
            os.unlink(host_path)


def test_a_message_stalled_midway_ends_on_the_wall_clock():
    """The worker sends a length prefix and half a body, then sleeps: the runner waits in
    its read, and only the parent's wall clock can end it."""
    source = FIND_PIPE + (
        "def f():\n    os.write(channel_fd(), struct.pack('>I', 100) + b'{\"kind\"')\n    time.sleep(60)\n"
    )
    started = time.monotonic()
    verdict = run_function(source, "f", [[]], SandboxLimits(wall_s=2), _skip_static_check=True)
    assert (verdict.status, verdict.reason) == ("timeout", "wall")
    assert time.monotonic() - started < 30  # not a timing figure: the 60 s sleep did not run out


def test_a_giant_length_prefix_is_refused_without_reading_it():
    source = FIND_PIPE + "def f():\n    os.write(channel_fd(), struct.pack('>I', 0xFFFFFFFF))\n    time.sleep(60)\n"
    verdict = run_function(source, "f", [[]], LIMITS, _skip_static_check=True)
    assert (verdict.status, verdict.reason) == ("error", "tampered"), verdict


def live_processes_with(marker: str) -> list[str]:
    """Processes (zombies aside: their parent reaps those) whose command line or working directory holds
    `marker`: a run the fork server forked keeps the server's command line but works in its job folder."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                args = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            where = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if marker in args or marker in where:
            found.append(f"{pid} {where} {args}")
    return found


@pytest.fixture
def own_job_dirs(monkeypatch):
    """Job folders under a folder of this test's own, so that its runs (and no one else's)
    can be told by their command line."""
    parent = tempfile.mkdtemp(prefix="sandbox-review-")
    os.chmod(parent, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", parent)
    yield parent
    shutil.rmtree(parent, ignore_errors=True)


def test_a_cancelled_run_leaves_no_process_and_no_mount(own_job_dirs):
    mounts_before = open("/proc/mounts").read()

    async def cancel_midway() -> None:
        source = "import time\ntime.sleep(30)\n"
        task = asyncio.ensure_future(arun_program(source, limits=SandboxLimits(wall_s=60), _skip_static_check=True))
        for _ in range(200):  # a fresh Python start on a loaded machine can take a second or more
            await asyncio.sleep(0.05)
            if live_processes_with(own_job_dirs):
                break
        assert live_processes_with(own_job_dirs), "the run had not started"
        await asyncio.sleep(0.2)  # under way, not just started
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    assert not live_processes_with(own_job_dirs)
    assert open("/proc/mounts").read() == mounts_before
    assert os.listdir(own_job_dirs) == []  # the job folder went too


@pytest.mark.xfail(
    strict=True,
    reason="not fixed: the scratch tmpfs is not counted against memory_mb "
    "(RLIMIT_AS does not see tmpfs pages); a run holds memory_mb + scratch_mb",
)
def test_scratch_counts_against_the_memory_limit():
    source = (
        "for i in range(6):\n    with open(f'f{i}', 'wb') as out:\n        out.write(b'x' * (10 << 20))\n"
        "held = bytearray(30 << 20)\nprint('held')\n"
    )
    verdict = run_program(source, limits=SandboxLimits(memory_mb=64, scratch_mb=64, wall_s=10), _skip_static_check=True)
    assert verdict.isolation.get("scratch_quota", {}).get("mb") == 64
    assert verdict.stdout.strip() != "held"  # 60 MiB of files and 30 MiB of memory under a 64 MiB limit


@pytest.fixture
def small_disk_for_jobs(monkeypatch):
    """Job folders (the runner's result file) on a 2 MiB tmpfs of this test's own."""
    mount_point = tempfile.mkdtemp(prefix="sandbox-review-disk-")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", mount_point], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        os.rmdir(mount_point)
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    monkeypatch.setattr(tempfile, "tempdir", mount_point)
    yield mount_point
    subprocess.run(["umount", "-l", mount_point], check=False)
    os.rmdir(mount_point)


def test_a_runner_that_fails_takes_its_worker_with_it(small_disk_for_jobs):
    """Finding: the runner died on an error of its own (here ENOSPC writing the result file)
    and left its worker running: the parent, which signals the group only while the runner
    is unreaped, waited out the wall clock, said `timeout`, and left the worker behind."""
    source = FIND_PIPE + (
        "import gc, json\ndef f():\n    time.sleep(1.5)\n"  # the disk fills meanwhile
        "    channel = next(o for o in gc.get_objects() if type(o).__name__ == 'PipeReporter')\n"
        "    reply = {'kind': 'call', 'index': 0, 'status': 'ok', 'value_json': json.dumps('x' * 100000)}\n"
        "    send(json.dumps({**reply, 'nonce': channel.nonce}).encode())  # its own reply, past one page\n"
        "    time.sleep(30)\n"
    )

    async def fill_the_disk_midway():
        limits = SandboxLimits(wall_s=8)
        run = asyncio.ensure_future(arun_function(source, "f", [[]], limits, _skip_static_check=True))
        await asyncio.sleep(0.7)
        with open(os.path.join(small_disk_for_jobs, "filler"), "wb") as filler:
            try:
                while True:
                    filler.write(b"x" * 65536)
                    filler.flush()
            except OSError:
                pass
        return await run

    verdict = asyncio.run(fill_the_disk_midway())
    left = live_processes_with(small_disk_for_jobs)
    outcome = f"{verdict.status}/{verdict.reason}: {verdict.error}"
    assert outcome.startswith("error/sandbox: ") and "No space left" in outcome, outcome
    assert left == []


def test_a_reply_that_nests_beside_its_value_is_refused():
    """Finding: a reply is a flat object (kind, index, status, value_json, nonce ...), but the
    runner parsed anything under its size cap, and 1 MB of `[{}, {}, ...]` beside the value
    is about 24 MiB of objects in the runner, which has no memory limit of its own (a caller
    raising max_output_bytes multiplies it). Nested fields are now refused before parsing."""
    source = FIND_PIPE + (
        "import gc, json\ndef f():\n"
        "    channel = next(o for o in gc.get_objects() if type(o).__name__ == 'PipeReporter')\n"
        "    padding = '[' + ','.join(['{}'] * 300000) + ']'\n"
        "    reply = json.dumps({'kind': 'call', 'index': 0, 'status': 'ok', 'value_json': '1',\n"
        "                        'nonce': channel.nonce})\n"
        "    send((reply[:-1] + ', \"padding\": ' + padding + '}').encode())\n"
        "    time.sleep(30)\n"
    )
    verdict = run_function(source, "f", [[]], LIMITS, _skip_static_check=True)
    outcome = f"{verdict.status}/{verdict.reason}: {verdict.error}"
    assert outcome.startswith("error/tampered: ") and "nest" in outcome, outcome


def test_a_worker_that_stops_reading_ends_on_the_wall_clock():
    """Call 0 answers itself on the channel and sleeps, never reading again: call 1's
    arguments (1 MB) fill the pipe, the runner blocks in its write, and the wall clock
    still ends the run."""
    source = FIND_PIPE + (
        "import gc, json\ndef f(x):\n"
        "    channel = next(o for o in gc.get_objects() if type(o).__name__ == 'PipeReporter')\n"
        "    reply = {'kind': 'call', 'index': 0, 'status': 'ok', 'value_json': '1', 'nonce': channel.nonce}\n"
        "    send(json.dumps(reply).encode())\n"
        "    time.sleep(60)\n"
    )
    started = time.monotonic()
    limits = SandboxLimits(wall_s=2)
    verdict = run_function(source, "f", [[0], ["y" * 1_000_000]], limits, _skip_static_check=True)
    assert (verdict.status, verdict.reason) == ("timeout", "wall")
    assert [call.status for call in verdict.calls] == ["ok", "timeout"]
    assert time.monotonic() - started < 30
