"""The sandbox's fork server: `python -s -S forkserver.py FD`, one per parent process.

A sandboxed run used to start Python and import the runner's modules (json, ctypes,
signal, the layers) before it did anything: ~30 of its ~40 ms, five times what a bare
`python -S` start costs. This process pays that once. For each run the parent sends,
on the socket FD, the job, its environment and working directory, whether to enter
new mount and network namespaces, and three descriptors (stdin, stdout, stderr); the
server forks, and the child enters the namespaces, takes the descriptors, leads a
session of its own and runs the runner's main(), exactly as `start.py` does after a
fresh start. Every layer is still applied per run, in the child (runner.py).

The server is the children's only reaper, so it also kills a run's process group when
the parent asks, by the run's request id: a group it has not reaped cannot belong to
another process yet, and an id, unlike a process number, is never given twice.
Messages are JSON; the socket is the parent's and the server's alone (children close it).
"""

# What every run imports besides the server's own modules: the children read /proc with encoding="ascii"
# (privileges.py, worker.py), and the worker's guards replace _posixsubprocess.fork_exec. Imported here
# once, not looked up along sys.path and loaded in every run (encodings.ascii: 1-1.7 ms of a print(1) run's
# ~15, measured A/B; _posixsubprocess, a shared library: ~0.4 ms fresh, 0.8 ms of a traced run's worker).
import _posixsubprocess  # noqa: F401
import array
import encodings.ascii  # noqa: F401
import json
import os
import select
import signal
import socket
import sys

import mounts
import runner
import worker

MAX_MESSAGE = 1 << 20
START = os.path.join(os.path.dirname(os.path.abspath(__file__)), "start.py")  # what a fresh start runs
FD_COUNT = 3  # stdin, stdout, stderr of the run


def receive(ctl: socket.socket) -> tuple[dict | None, list[int]]:
    """One message and the descriptors sent with it; (None, []) once the parent is gone."""
    fds = array.array("i")
    data, ancillary, _, _ = ctl.recvmsg(MAX_MESSAGE, socket.CMSG_LEN(FD_COUNT * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return (json.loads(data) if data else None), list(fds)


def send(ctl: socket.socket, message: dict) -> None:
    ctl.send(json.dumps(message).encode())


def run_child(request: dict, fds: list[int], ctl: socket.socket, closing: list[int]) -> None:
    """In the forked child: become what `unshare ... python start.py JOB` would have been."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ctl.close()  # through the socket object, which would otherwise close its number again later
    for fd in closing:
        os.close(fd)
    for name in ("socket", "_socket", "array"):  # the server's own: the code finds what a fresh start has
        sys.modules.pop(name, None)
    os.setsid()
    try:
        mounts.enter_namespaces(request["mount"], request["net"])
    except OSError as exc:  # never run a job that believes it has namespaces it lacks
        os.write(fds[2], f"sandbox fork server: {exc}\n".encode())
        os._exit(125)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [START, request["job"]]
    runner.main()
    sys.exit(0)  # SystemExit leaves through the server's frames: Python then ends as after a fresh start


def reap(ctl: socket.socket, children: dict[int, int]) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        children.pop(pid, None)
        send(ctl, {"exited": pid, "status": status})


def serve(ctl: socket.socket) -> None:
    woken_r, woken_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(woken_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd hears of exits
    children: dict[int, int] = {}  # pid -> request id, while unreaped
    while True:
        readable, _, _ = select.select([ctl, woken_r], [], [])
        if woken_r in readable:
            while os.read(woken_r, 512) == 512:
                pass
            reap(ctl, children)
        if ctl not in readable:
            continue
        request, fds = receive(ctl)
        if request is None:
            return  # the parent is gone; its runs are its own process groups and end by their limits
        if "kill" in request:
            for pid in [pid for pid, ident in children.items() if ident == request["kill"]]:
                try:  # unreaped: the group is still this run's
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            continue
        pid = os.fork()
        if pid == 0:
            run_child(request, fds, ctl, [woken_r, woken_w])
        for fd in fds:
            os.close(fd)
        children[pid] = request["id"]
        send(ctl, {"spawned": request["id"], "pid": pid})
        reap(ctl, children)


def build_view(spec: dict) -> None:
    """Enter a mount namespace of the server's own and hide the host there, once, for the runs to copy:
    the read paths of jobs with these extra paths, and the folder their job folders are made in."""
    mounts.enter_namespaces(mount=True, net=False)
    kept = worker.read_paths({"extra_paths": spec["extra_paths"]})
    mounts.hide_host(kept + [spec["tmp_root"]])
    runner.PREBUILT_VIEW = {"kept": sorted(kept), "tmp_root": spec["tmp_root"]}


if __name__ == "__main__":
    if len(sys.argv) > 2:
        build_view(json.loads(sys.argv[2]))
    # A process's first compile() builds the compiler's lazy state: 1.5-2.5 ms in a forked child, against
    # ~0.2 ms once it is built. Built here, so each worker's compile of the code costs what a second one does.
    compile("pass", "<warm-up>", "exec")
    serve(socket.socket(fileno=int(sys.argv[1])))
