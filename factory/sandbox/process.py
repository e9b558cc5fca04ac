"""Start the child and watch it: wall clock, output caps, the kill.

The child leads its own session, so one `killpg` reaches everything it could
have started. Its output is read as it comes, into buffers that stop growing
at the cap; past the cap the child is killed rather than drained forever.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass, field

from .forkserver import ForkedRun, ForkServer

READ_CHUNK = 65536
SCRATCH_POLL_S = 0.05  # the fallback quota's reaction time: what a fast writer gets past the cap
DRAIN_AFTER_KILL_S = 5.0  # a killed child's pipes close at once; this only bounds a surprise


@dataclass
class CappedBuffer:
    cap: int
    data: bytearray = field(default_factory=bytearray)
    overflowed: bool = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        self.data += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.overflowed = True


@dataclass
class RawOutcome:
    """What the parent saw, before it is read as a verdict."""

    returncode: int | None
    stdout: CappedBuffer
    stderr: CappedBuffer
    timed_out: bool
    duration_s: float
    records: list[dict]
    scratch_exceeded: bool = False


@dataclass
class ScratchWatch:
    """The fallback quota where no tmpfs can be mounted: the parent measures the scratch
    directory as the child runs and kills it past `max_bytes` or `max_files`."""

    path: str
    max_bytes: int
    max_files: int
    exceeded: bool = False


def scratch_usage(path: str) -> tuple[int, int]:
    """(bytes allocated, entries) under `path`, without recursion (the tree is the code's to shape)."""
    used, entries, stack = 0, 0, [path]
    while stack:
        try:
            with os.scandir(stack.pop()) as found:
                for entry in found:
                    entries += 1
                    info = entry.stat(follow_symlinks=False)
                    used += info.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue  # removed while we looked
    return used, entries


async def watch_scratch(watch: ScratchWatch, process: asyncio.subprocess.Process) -> None:
    while process.returncode is None:
        used, entries = scratch_usage(watch.path)
        if used > watch.max_bytes or entries > watch.max_files:
            watch.exceeded = True
            kill_group(process)
            return
        await asyncio.sleep(SCRATCH_POLL_S)


def kill_group(process) -> None:
    if process.returncode is not None:
        return  # reaped: its pid (and group id) may already belong to someone else
    if isinstance(process, ForkedRun):
        process.kill_group()  # the fork server reaps it, so the server kills it
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone (a reaped group cannot be signalled)


async def pump(stream: asyncio.StreamReader, buffer: CappedBuffer, on_overflow) -> None:
    # Past the cap the child is killed, and the rest is read and dropped until EOF:
    # a pipe left unread would keep the subprocess transport open.
    while chunk := await stream.read(READ_CHUNK):
        was_over = buffer.overflowed
        buffer.feed(chunk)
        if buffer.overflowed and not was_over:
            on_overflow()


@dataclass
class Launch:
    """How to start a run: `argv` as a fresh process, or `fork` (the server and its request) when a fork
    server runs it (forkserver.py). Either way: `env`, working directory `cwd`, stdin from `stdin_path`."""

    argv: list[str]
    env: dict
    cwd: str
    stdin_path: str | None
    fork: tuple[ForkServer, dict] | None = None


async def start(launch: Launch) -> tuple[object, asyncio.StreamReader, asyncio.StreamReader, list]:
    """(process, its stdout, its stderr, transports to close); through the fork server when it answers."""
    if launch.fork is not None:
        try:
            return await start_forked(*launch.fork, launch.stdin_path)
        except OSError:
            pass  # the server stopped: this run starts as a fresh Python
    with open(launch.stdin_path or os.devnull, "rb") as stdin:
        process = await asyncio.create_subprocess_exec(
            *launch.argv, stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=launch.env, cwd=launch.cwd, start_new_session=True,
        )  # fmt: skip
    return process, process.stdout, process.stderr, []


async def start_forked(server: ForkServer, request: dict, stdin_path: str | None) -> tuple:
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    try:
        stdin = os.open(stdin_path or os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            process = await server.start(request, [stdin, stdout_w, stderr_w])
        finally:
            for fd in (stdin, stdout_w, stderr_w):  # the server holds its own copies now
                os.close(fd)
    except BaseException:
        os.close(stdout_r)
        os.close(stderr_r)
        raise
    (stdout, out_transport), (stderr, err_transport) = await pipe_reader(stdout_r), await pipe_reader(stderr_r)
    return process, stdout, stderr, [out_transport, err_transport]


async def pipe_reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", buffering=0)
    )
    return reader, transport


async def supervise(launch: Launch, wall_s: float, max_output_bytes: int, result_path: str, max_result_bytes: int,
                    scratch_watch: ScratchWatch | None = None) -> RawOutcome:  # fmt: skip
    started = time.monotonic()
    stdout, stderr = CappedBuffer(max_output_bytes), CappedBuffer(max_output_bytes)
    process, out_stream, err_stream, transports = await start(launch)
    tasks = [
        asyncio.ensure_future(pump(out_stream, stdout, lambda: kill_group(process))),
        asyncio.ensure_future(pump(err_stream, stderr, lambda: kill_group(process))),
        asyncio.ensure_future(process.wait()),
    ]
    watcher = asyncio.ensure_future(watch_scratch(scratch_watch, process)) if scratch_watch else None
    try:
        _, pending = await asyncio.wait(tasks, timeout=wall_s)
        timed_out = bool(pending)
    finally:
        # Also reached when the caller cancels us: never leave a child running,
        # and let its pipes reach EOF so that the transport closes with the loop open.
        kill_group(process)
        await asyncio.wait(tasks, timeout=DRAIN_AFTER_KILL_S)
        for task in [*tasks, watcher] if watcher else tasks:
            task.cancel()
        for transport in transports:
            transport.close()
    return RawOutcome(
        returncode=process.returncode, stdout=stdout, stderr=stderr, timed_out=timed_out,
        duration_s=time.monotonic() - started, records=read_records(result_path, max_result_bytes),
        scratch_exceeded=bool(scratch_watch and scratch_watch.exceeded),
    )  # fmt: skip


def read_records(path: str, max_bytes: int) -> list[dict]:
    """The child's JSON lines; a line cut short by a kill is skipped."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(max_bytes)
    except OSError:
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # cut short by a kill, or nested past the parser
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
