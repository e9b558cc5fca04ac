"""The sandbox child: `python -s -S start.py JOB.json` runs main(), started by the parent inside
`unshare --mount --net` where the kernel allows.

Two processes, so that the generated code cannot write the records the parent believes:
- the runner (this file, trusted): reads the job, opens the result file, sets up the
  scratch tmpfs (`mounts.py`), forks the worker, confines itself (Landlock, seccomp),
  then asks the worker for each call in turn — sending a call's arguments only then,
  so nothing the worker writes ahead can answer it — checks every reply, and writes
  the result records itself; it ends as the worker ended (its exit status or signal).
- the worker (`worker.py`): closes the result file, drops its privileges, confines
  itself, and runs the code. Anything it writes unasked, out of turn or out of shape
  makes the run error/tampered.
The calls' arguments are in their own file, read by the runner after the fork, so no
copy of them is left in the worker's memory.
"""

import json
import os
import resource
import signal
import sys
import time
import traceback

import channel
import landlock
import mounts
import privileges
import seccomp
import worker

sys.path.pop(0)  # this folder: the generated code has no business importing the runner's modules

MESSAGE_OVERHEAD = 64 * 1024  # a reply's own fields beside its value: a clipped error, numbers
STATUSES = ("ok", "error", "timeout")


def write(results, record: dict) -> None:
    results.write(channel.DUMPS(record) + "\n")
    results.flush()


def read_calls(job: dict) -> list:
    if job["mode"] != "function":
        return []
    with open(job["calls_path"], encoding="utf-8") as handle:
        return json.load(handle)


class FileReporter:
    """With the result_channel layer switched off (tests only): one process, which
    writes its records straight into the result file, as the sandbox once did."""

    def __init__(self, results, calls: list, runner_isolation: dict):
        self.results, self.calls, self.runner_isolation = results, calls, runner_isolation

    def send(self, record: dict) -> None:
        if record["kind"] == "ready":
            record = {"kind": "ready", "isolation": {**record["isolation"], **self.runner_isolation}}
        write(self.results, record)

    def requests(self):
        return enumerate(self.calls)


class PipeReporter:
    """The worker's end of the channel: it is told each call when the runner asks, and
    answers with the request's nonce, which only a reader of the request can know."""

    def __init__(self, to_runner: int, from_runner: int):
        self.to_runner, self.from_runner, self.nonce = to_runner, from_runner, None

    def send(self, message: dict) -> None:
        channel.send(self.to_runner, {**message, "nonce": self.nonce} if self.nonce else message)

    def requests(self):
        while message := channel.receive(self.from_runner, 1 << 30):
            self.nonce = message["nonce"]
            if message.get("kind") != "call":
                return
            yield message["index"], message["args"]


# Set by the fork server when its own mount namespace already shows the host view for these read paths and
# the whole top-level folder the job folders are made under (child/forkserver.py): a run's copy of that
# namespace then only hides, on the way down to its scratch, what is beside it (two mounts for /tmp/JOB/scratch
# instead of ~26).
PREBUILT_VIEW: dict | None = None  # {"kept": sorted read paths, "tmp_root": a top-level folder}


def hide_host(job: dict) -> bool:
    """Show the worker only what it may read (mounts.hide_host); True when something was covered."""
    kept, view = worker.read_paths(job), PREBUILT_VIEW
    if view and sorted(kept) == view["kept"] and os.path.realpath(job["scratch"]).startswith(view["tmp_root"] + "/"):
        return bool(mounts.hide_under(view["tmp_root"], kept + [job["scratch"]]))
    return bool(mounts.hide_host(kept + [job["scratch"]]))


def prepare(job: dict) -> dict:
    """As root of the mount namespace, before the fork: the scratch tmpfs, Python made
    readable for the worker's id, the scratch directory its own. Returns what held."""
    disabled = set(job["disabled"])
    ids = privileges.target_ids() if "privileges" not in disabled else None
    held = {"scratch_quota": False}
    if job["mount_namespace"] and "host_view" not in disabled:
        held["host_view"] = hide_host(job)
    else:
        held["host_view"] = False
    if ids and job["mount_namespace"]:
        try:
            held["uncovered"] = mounts.expose(worker.read_paths(job) + [job["scratch"]], ids)
        except OSError as exc:
            ids, held["privileges_note"] = None, f"Python not made readable for nobody: {exc}"[:200]
    elif ids and mounts.blocked(worker.read_paths(job) + [job["scratch"]], *ids):
        ids, held["privileges_note"] = None, "no mount namespace to make Python readable for nobody"
    if job["mount_namespace"] and "scratch_quota" not in disabled:
        mounts.scratch_tmpfs(job["scratch"], job["scratch_mb"], job["scratch_files"], ids)
        held["scratch_quota"] = {"mb": job["scratch_mb"], "files": job["scratch_files"]}
    else:
        if "scratch_quota" not in disabled:  # no tmpfs of its own: the parent measures it as it runs
            held["scratch_quota"] = {"mb": job["scratch_mb"], "files": job["scratch_files"], "watched": True}
        if ids:
            os.chown(job["scratch"], *ids)
    os.chdir(job["scratch"])  # the tmpfs, not the directory under it that the parent made our cwd
    job["worker_ids"] = ids
    return held


def start_worker(job: dict, results) -> tuple[int, int, int]:
    """Fork the worker; returns (pid, the fd it writes to, the fd it reads from)."""
    to_runner_r, to_runner_w = os.pipe()
    to_worker_r, to_worker_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(to_runner_w)
        os.close(to_worker_r)
        return pid, to_runner_r, to_worker_w
    status = 1
    try:
        results.close()  # the records are the runner's alone
        os.close(to_runner_r)
        os.close(to_worker_w)
        status = worker.serve(job, PipeReporter(to_runner_w, to_worker_r))
    except BaseException:  # noqa: B036 - a layer that failed to apply: say so on stderr, status 1
        traceback.print_exc()
    leave(status)


def leave(status: int) -> None:
    """End the worker as Python's own exit would, less tearing every module down: the code's
    threads are waited for, its atexit handlers run and its output is flushed, in that order.
    The teardown cost ~7 of a `print(1)` run's ~20 ms; finalizers it would have run at exit
    (CPython does not promise them) write nothing the verdict reads: the scratch goes with the run."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None and hasattr(threading, "_shutdown"):
            threading._shutdown()
        import atexit

        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or replaced stream: what it held is lost, as at exit
                pass
        os._exit(status)


def confine_runner(job: dict, worker_pid: int) -> dict:
    abi = landlock.restrict(worker.read_paths(job), [], scoped=False) if job["landlock"] else 0
    filtered = seccomp.install(allow_threads=False, also_signal=(worker_pid,)) if job["seccomp"] else False
    return {"landlock_abi": abi, "seccomp": filtered}


def outcome_fields(message: dict) -> dict:
    status = message.get("status")
    fields = {"status": status if status in STATUSES else "error"}
    for name, cap in (("reason", 100), ("error", 2000)):
        if isinstance(message.get(name), str):
            fields[name] = message[name][:cap]
    return fields


def call_record(reply: dict, index: int, duration_s: float) -> dict:
    if reply.get("kind") != "call" or type(reply.get("index")) is not int or reply["index"] != index:
        raise channel.ChannelError(f"a reply that is not call {index}'s")
    record = {"kind": "call", "index": index, "duration_s": duration_s, **outcome_fields(reply)}
    if record["status"] == "ok":
        if not isinstance(reply.get("value_json"), str):
            raise channel.ChannelError("an ok reply without a value")
        record["value_json"] = reply["value_json"]
    return record


def ask(from_worker: int, to_worker: int, request: dict, cap: int) -> dict | None:
    """Send `request` and read the one reply; None when the worker is gone. The request
    carries a fresh nonce the reply must repeat: a reply written blind, ahead of time or
    on a timer, cannot know it."""
    if channel.pending(from_worker) and channel.receive(from_worker, cap, flat=True) is not None:
        raise channel.ChannelError("the worker wrote before it was asked")
    nonce = os.urandom(16).hex()
    try:
        channel.send(to_worker, {**request, "nonce": nonce})
    except OSError:
        return None
    reply = channel.receive(from_worker, cap, flat=True)
    if reply is not None and reply.get("nonce") != nonce:
        raise channel.ChannelError("a reply that does not answer the request")
    return reply


def relay(job: dict, calls: list, from_worker: int, to_worker: int, results, held: dict) -> None:
    cap = job["max_value_bytes"] + MESSAGE_OVERHEAD
    ready = channel.receive(from_worker, cap)  # written before any generated code ran; nested (its layers)
    if ready is None:
        return
    if ready.get("kind") != "ready" or not isinstance(ready.get("isolation"), dict):
        raise channel.ChannelError("the worker's first message is not its report")
    write(results, {"kind": "ready", "isolation": {**ready["isolation"], **held}})
    message = channel.receive(from_worker, cap, flat=True)
    called = message is not None and message.get("kind") == "calls" and job["mode"] == "function"
    if called:
        write(results, {"kind": "calls"})
        for index, args in enumerate(calls):
            started = time.monotonic()
            reply = ask(from_worker, to_worker, {"kind": "call", "index": index, "args": args}, cap)
            if reply is None:
                return
            write(results, call_record(reply, index, time.monotonic() - started))
        message = ask(from_worker, to_worker, {"kind": "stop"}, cap)
    if message is None:
        return
    if message.get("kind") != "end":
        raise channel.ChannelError("a message out of turn")
    if job["mode"] == "function" and not called and message.get("status") != "error":
        # The worker ends a function run early only on a failure (the module raised, no such
        # function): an ok end before the calls would make a verdict `ok` for calls never run.
        raise channel.ChannelError("an end that is not a failure, before the calls")
    write(results, {"kind": "end", **outcome_fields(message)})
    if channel.receive(from_worker, cap, flat=True) is not None:  # until the worker exits: nothing more is due
        raise channel.ChannelError("the worker wrote after its end")


def stop(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def end_as(pid: int) -> None:
    """Exit the way the worker did, so the parent reads its status and signal as before."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    fd = os.open(job["result_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    results = os.fdopen(fd, "w", encoding="utf-8")
    sys.path.extend(job["extra_paths"])
    calls = read_calls(job)  # before prepare: the host view hides the folder the calls came in
    held = {**prepare(job), "disabled": job["disabled"]}
    if "result_channel" in job["disabled"]:
        status = worker.serve(job, FileReporter(results, calls, {**held, "result_channel": False}))
        results.close()
        sys.exit(status)
    pid, from_worker, to_worker = start_worker(job, results)
    try:
        held = {**held, "result_channel": True, "runner": confine_runner(job, pid)}
        relay(job, calls, from_worker, to_worker, results, held)
    except channel.ChannelError as exc:
        stop(pid)
        write(results, {"kind": "end", "status": "error", "reason": "tampered",
                        "error": f"the code wrote to the sandbox's result channel: {exc}"})  # fmt: skip
        os._exit(1)
    except BaseException:
        # The runner's own failure (a full disk under the result file, say): the worker goes
        # first. Left alone it would outlive us, out of the parent's reach: the parent signals
        # the group only while the runner is unreaped. The traceback then says why, status 1.
        stop(pid)
        raise
    results.close()
    end_as(pid)
