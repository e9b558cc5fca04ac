"""The parent's side of the sandbox's fork server (child/forkserver.py).

One server per process, namespace prefix and host view, started at the first run that needs it. A run is a
request on a private socket (the job, its environment, its working directory, the
namespaces to enter, three descriptors); the server forks it and later says how it
ended. A thread reads the server's messages and hands each to the event loop that
asked, so runs from any loop (run_sync starts one per call) share the server. The
server reaps the runs, so their groups are killed through it, by request id
(`ForkedRun.kill_group`): a kill can then never reach a process that took a reaped run's number.

FACTORY_SANDBOX_FORKSERVER=0 starts every run as a fresh Python instead (api.py's
argv), as does a server that could not start or stopped.
"""

from __future__ import annotations

import array
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

SERVER = Path(__file__).parent / "child" / "forkserver.py"
SWITCH_ENV = "FACTORY_SANDBOX_FORKSERVER"
MAX_MESSAGE = 1 << 16


def settle(future: asyncio.Future, value: object) -> None:
    if not future.done():
        future.set_exception(value) if isinstance(value, BaseException) else future.set_result(value)


def hand_over(loop: asyncio.AbstractEventLoop, future: asyncio.Future, value: object) -> None:
    try:
        loop.call_soon_threadsafe(settle, future, value)
    except RuntimeError:
        pass  # that loop is closed: nobody waits for this any more


class ForkServer:
    def __init__(self, prefix: tuple[str, ...], env: dict[str, str], view: str | None = None):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [*prefix, sys.executable, "-s", "-S", str(SERVER), str(theirs.fileno()), *([view] if view else [])],
                env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), start_new_session=True, cwd="/",
            )  # fmt: skip
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.socket, self.owner, self.alive = ours, os.getpid(), True
        self.lock = threading.Lock()
        self.asked: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future, asyncio.Future]] = {}
        self.running: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}  # pid -> its exit
        self.next_id = 0
        threading.Thread(target=self.read, name="sandbox-forkserver", daemon=True).start()

    def read(self) -> None:
        while True:
            try:
                data = self.socket.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                return self.stopped()
            message = json.loads(data)
            with self.lock:
                if "spawned" in message:
                    loop, spawned, exited = self.asked.pop(message["spawned"])
                    self.running[message["pid"]] = (loop, exited)
                    hand_over(loop, spawned, message["pid"])
                elif message.get("exited") in self.running:
                    loop, exited = self.running.pop(message["exited"])
                    hand_over(loop, exited, message["status"])

    def stopped(self) -> None:
        """The server is gone: every run waiting on it fails, and runs it left behind are killed."""
        gone = OSError("the sandbox's fork server stopped")
        with self.lock:
            self.alive = False
            for loop, spawned, _exited in self.asked.values():
                hand_over(loop, spawned, gone)
            for pid, (loop, exited) in self.running.items():
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                hand_over(loop, exited, gone)
            self.asked.clear()
            self.running.clear()

    async def start(self, request: dict, fds: list[int]) -> ForkedRun:
        loop = asyncio.get_running_loop()
        spawned, exited = loop.create_future(), loop.create_future()
        with self.lock:
            if not self.alive:
                raise OSError("the sandbox's fork server stopped")
            ident, self.next_id = self.next_id, self.next_id + 1
            self.asked[ident] = (loop, spawned, exited)
            try:
                fd_list = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                self.socket.sendmsg([json.dumps({**request, "id": ident}).encode()], fd_list)
            except OSError:
                del self.asked[ident]
                raise
        try:
            pid = await asyncio.shield(spawned)
        except asyncio.CancelledError:  # the caller gave up: the run it asked for must not run unwatched
            self.kill(ident)
            raise
        return ForkedRun(self, pid, ident, exited)

    def kill(self, ident: int) -> None:
        """Kill run `ident`'s group, if the server has not reaped it (a run not yet forked is killed as the
        server reads this after its request)."""
        with self.lock:
            if self.alive:
                try:
                    self.socket.send(json.dumps({"kill": ident}).encode())
                except OSError:
                    pass


class ForkedRun:
    """What supervise() needs of a process, for a run the fork server started."""

    def __init__(self, server: ForkServer, pid: int, ident: int, exited: asyncio.Future):
        self.server, self.pid, self.ident, self.exited, self.returncode = server, pid, ident, exited, None

    async def wait(self) -> int:
        try:
            self.returncode = os.waitstatus_to_exitcode(await self.exited)
        except OSError:  # the server stopped and killed the runs it had started
            self.returncode = -signal.SIGKILL
        return self.returncode

    def kill_group(self) -> None:
        if self.returncode is None:
            self.server.kill(self.ident)


SERVERS: dict[tuple, ForkServer | None] = {}  # (owner pid, prefix, view) -> server, None: broken
SERVERS_LOCK = threading.Lock()
RESTARTS: dict[tuple, int] = {}
MAX_RESTARTS = 3  # a server that keeps stopping is given up for this process: runs start as fresh Pythons


def server_for(prefix: tuple[str, ...], env: dict[str, str], view: str | None = None) -> ForkServer | None:
    """This process's server for `prefix` and host `view` (child/forkserver.py's build_view, as JSON; None: the
    runs hide the host themselves), started on first use; None when switched off or broken."""
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return None
    key = (os.getpid(), prefix, view)
    with SERVERS_LOCK:
        server = SERVERS.get(key)
        if key in SERVERS and (server is None or server.alive):
            return server
        RESTARTS[key] = RESTARTS.get(key, -1) + 1
        try:
            SERVERS[key] = ForkServer(prefix, env, view) if RESTARTS[key] <= MAX_RESTARTS else None
        except OSError:
            SERVERS[key] = None
        return SERVERS[key]
