"""The sandbox's fork server (factory/sandbox/forkserver.py, child/forkserver.py): runs are forked
by one server per process, give the verdicts a fresh Python gives, and a server that dies
fails only the runs it held."""

import ast
import asyncio
import os
import signal
import tempfile
import time

import pytest

from factory.sandbox import SandboxLimits, arun_program, forkserver, run_function, run_program, sandbox_refusal

pytestmark = pytest.mark.skipif(sandbox_refusal() is not None, reason=f"no sandbox here: {sandbox_refusal()}")

SPIN = "while True:\n    pass\n"


@pytest.fixture
def own_job_dirs(monkeypatch):
    parent = tempfile.mkdtemp(prefix="sandbox-fork-")
    os.chmod(parent, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", parent)
    yield parent


def runs_under(folder: str) -> list[int]:
    """Live processes working in a job folder under `folder`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(folder):
                found.append(int(pid))
        except OSError:
            continue
    return found


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return int(next(line.split()[1] for line in status if line.startswith("PPid:")))


def live_servers() -> dict[int, forkserver.ForkServer]:
    """This process's running fork servers by pid (one per namespace prefix and host view)."""
    found = [s for (owner, *_), s in forkserver.SERVERS.items() if owner == os.getpid() and s and s.alive]
    return {server.process.pid: server for server in found}


async def while_spinning(folder: str, then) -> object:
    """Start a spinning run, wait until it is seen working in `folder`, call `then(run pids)`, await the verdict."""
    task = asyncio.ensure_future(arun_program(SPIN, limits=SandboxLimits(cpu_s=20, wall_s=20)))
    for _ in range(100):
        if runs_under(folder):
            break
        await asyncio.sleep(0.05)
    then(runs_under(folder))
    return await asyncio.wait_for(task, 30)


@pytest.fixture(autouse=True)
def server_on(monkeypatch):
    monkeypatch.delenv(forkserver.SWITCH_ENV, raising=False)


def test_runs_are_forked_by_one_server_per_process(own_job_dirs):
    assert run_program("print(1)").stdout == "1\n"
    servers = live_servers()
    parents = []

    def check_and_stop(pids):
        parents.extend(parent_of(pid) for pid in pids)
        os.killpg(os.getpgid(pids[0]), signal.SIGKILL)  # ends the run early

    asyncio.run(while_spinning(own_job_dirs, check_and_stop))
    assert set(parents) & set(servers)  # the runner is a server's child, not a fresh start of ours
    assert live_servers() == servers  # the same server again: none started for the second run


CASES = {
    "stdin echo": dict(source="print(input()[::-1])", stdin="abc"),
    "exception": dict(source="print(1)\nraise ValueError('no')\n"),
    "cpu": dict(source=SPIN, limits=SandboxLimits(cpu_s=1, wall_s=10)),
    "wall": dict(source=SPIN, limits=SandboxLimits(cpu_s=10, wall_s=1)),
    "memory": dict(source="x = bytearray(10**10)\n"),
    "output cap": dict(source="print('x' * 100000)\n", limits=SandboxLimits(max_output_bytes=1024)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forked_run_gives_the_verdict_a_fresh_python_gives(case, monkeypatch):
    def verdict():
        found = run_program(**CASES[case])
        # Past the output cap the kill may land before the runner wrote what held: no isolation either way.
        return found.status, found.reason, found.stdout[:200], found.isolation if found.reason != "output" else None

    forked = verdict()
    monkeypatch.setenv(forkserver.SWITCH_ENV, "0")
    assert verdict() == forked


def test_function_calls_run_the_same_forked_or_fresh(monkeypatch):
    source = "def f(x):\n    if x == 2:\n        raise KeyError(x)\n    return x * 3\n"

    def calls():
        return [(c.status, c.value) for c in run_function(source, "f", [[1], [2], [3]]).calls]

    forked = calls()
    monkeypatch.setenv(forkserver.SWITCH_ENV, "0")
    assert calls() == forked == [("ok", 3), ("error", None), ("ok", 9)]


def test_a_server_killed_mid_run_fails_that_run_and_the_next_run_gets_a_new_server(own_job_dirs):
    run_program("print(1)")
    killed = []

    def kill_its_server(pids):
        server = live_servers()[next(p for p in map(parent_of, pids) if p in live_servers())]
        killed.append(server)
        server.process.kill()

    verdict = asyncio.run(while_spinning(own_job_dirs, kill_its_server))
    assert verdict.status != "ok"
    deadline = time.monotonic() + 5
    while runs_under(own_job_dirs) and time.monotonic() < deadline:  # its group was killed with it
        time.sleep(0.05)
    assert runs_under(own_job_dirs) == []
    assert run_program("print(2)").stdout == "2\n"
    assert killed[0] not in live_servers().values() and live_servers()


@pytest.mark.parametrize("server", ["1", "0"], ids=["forked", "fresh"])
def test_the_worker_ends_as_python_would_its_atexit_handlers_run_and_its_output_is_flushed(server, monkeypatch):
    """The worker skips the teardown of its modules (runner.leave), not the code's own exit work."""
    monkeypatch.setenv(forkserver.SWITCH_ENV, server)
    limits = SandboxLimits(allowed_imports=("atexit", "sys"))
    source = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit last', end=''))\n"
        "atexit.register(lambda: sys.stderr.write('atexit first'))\n"
        "print('no newline yet', end=' | ')\n"
    )
    verdict = run_program(source, limits=limits)
    assert (verdict.status, verdict.stdout, verdict.stderr) == ("ok", "no newline yet | atexit last", "atexit first")
    calls = run_function("import atexit\natexit.register(lambda: print('bye'))\ndef f(x):\n    return x\n", "f",
                         [[1]], limits)  # fmt: skip
    assert calls.ok and calls.stdout == "bye\n"


def test_a_run_in_the_servers_shared_view_sees_no_other_job_and_none_of_its_own_files(own_job_dirs, monkeypatch):
    """The server hides the host once and shows the job folders' folder whole; each run covers that again,
    so a run beside another sees only its own way down to its scratch (Landlock off, to list folders)."""
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "landlock")
    source = (
        "import os\nscratch = os.getcwd()\njob = os.path.dirname(scratch)\n"
        "print(repr((sorted(os.listdir(os.path.dirname(job))), sorted(os.listdir(job)), os.path.lexists('/etc/hostname'))))\n"
    )
    limits = SandboxLimits(allowed_imports=("os",), cpu_s=20, wall_s=20)

    async def side_by_side():
        neighbour = asyncio.ensure_future(arun_program(SPIN, limits=limits))
        for _ in range(100):
            if runs_under(own_job_dirs):
                break
            await asyncio.sleep(0.05)
        seen = await arun_program(source, limits=limits, _skip_static_check=True)
        still_there = len(os.listdir(own_job_dirs))  # the neighbour's job folder (the run's own went with it)
        neighbour.cancel()
        return seen, still_there

    seen, jobs_then = asyncio.run(side_by_side())
    assert seen.status == "ok", seen.error
    folders, own, hostname = ast.literal_eval(seen.stdout)
    assert jobs_then == 1 and len(folders) == 1 and own == ["scratch"] and hostname is False
