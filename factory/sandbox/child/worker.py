"""The worker: the process that runs the generated code, forked by the runner.

It closes its own doors (rlimits, Python guards, the privilege drop, Landlock,
seccomp), reports them as its first message — written before any generated code
runs, so the runner can believe it — then runs the code and answers the runner's
requests through a `Reporter`. Nothing it says after that is believed beyond what
a function's return value is anyway: the runner asks for each call with its
arguments and takes one reply per question."""

from __future__ import annotations

import builtins
import gc
import importlib
import linecache
import resource
import signal
import sys
import time
import traceback

import guards
import landlock
import privileges
import seccomp
from channel import DUMPS

FILENAME = "<sandbox>"
MAX_ERROR_CHARS = 1000  # an exception's message is the code's to choose, and so is its length
SYSTEM_READ_PATHS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/etc/ld.so.cache",
                     "/dev/null", "/dev/urandom", "/usr/share/zoneinfo")  # fmt: skip


class CallTimeout(BaseException):
    """Raised into a call that ran past its own time; BaseException so that a plain
    `except Exception` in the generated code does not swallow it."""


def set_rlimits(job: dict) -> None:
    mib = 1024 * 1024
    cpu = int(job["cpu_s"]) + (job["cpu_s"] % 1 > 0)
    # The hard CPU limit one second later turns a process that ignores SIGXCPU into a SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (job["memory_mb"] * mib, job["memory_mb"] * mib))
    resource.setrlimit(resource.RLIMIT_FSIZE, (job["file_size_mb"] * mib, job["file_size_mb"] * mib))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def read_paths(job: dict) -> list:
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return sorted(python | set(job["extra_paths"]) | set(sys.path)) + list(SYSTEM_READ_PATHS)


def network_interfaces() -> list:
    """This process's own view (/proc/self/net follows the network namespace)."""
    try:
        with open("/proc/self/net/dev", encoding="ascii") as handle:
            return [line.split(":")[0].strip() for line in handle.readlines()[2:]]
    except OSError:
        return ["unknown"]


def close_doors(job: dict) -> dict:
    """Apply every layer of the worker; returns what was applied, for the verdict.
    Fail closed: where the parent saw the kernel offer a layer, failing to apply it is an error."""
    disabled = set(job["disabled"])
    set_rlimits(job)
    if "python_guards" not in disabled:
        guards.patch_os()
    # Checked, not taken from the parent: an empty namespace has nothing but a loopback.
    isolated_network = job["network_namespace"] and network_interfaces() == ["lo"]
    applied = {"rlimits": True, "python_guards": "python_guards" not in disabled, "network_namespace": isolated_network}
    if "privileges" not in disabled:
        privileges.drop(job["worker_ids"])
    applied["privileges"] = held = privileges.report()
    if "privileges" not in disabled and not (held["caps_empty"] and held["no_new_privs"]):
        raise PermissionError(f"the privilege drop did not hold: {held}")  # fail closed, as for the kernel layers
    applied["landlock_abi"] = landlock.restrict(read_paths(job), [job["scratch"]]) if job["landlock"] else 0
    applied["seccomp"] = seccomp.install(allow_threads=job["max_processes"] > 1) if job["seccomp"] else False
    return applied


def describe(exc: BaseException) -> dict:
    """Status, reason, a one-line error and the line of the generated code to blame."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == FILENAME]
    line = frames[-1].lineno if frames else getattr(exc, "lineno", None)
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1][:MAX_ERROR_CHARS]
    if isinstance(exc, CallTimeout):
        status, reason, text = "timeout", "call_wall", "the call ran past its own time limit"
    elif isinstance(exc, MemoryError):
        status, reason, text = "error", "memory", "MemoryError: the memory limit was reached"
    elif isinstance(exc, RecursionError):
        status, reason = "error", "recursion"
    elif isinstance(exc, SystemExit):
        status, reason, text = "error", "exit_code", f"SystemExit: {exc.code}"
    else:
        status, reason = "error", "exception"
    return {"status": status, "reason": reason, "error": f"line {line}: {text}" if line else text}


def report_exception(exc: BaseException, print_traceback: bool) -> dict:
    try:
        outcome = describe(exc)
        if print_traceback:  # programs only: a traceback per failed call would flood stderr
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
            lines = traceback.format_list(frames[-20:]) + traceback.format_exception_only(type(exc), exc)
            sys.stderr.write("Traceback (most recent call last):\n" + "".join(lines)[-20 * MAX_ERROR_CHARS :])
    except MemoryError:
        outcome = {"status": "error", "reason": "memory", "error": "MemoryError: the memory limit was reached"}
    exc.__traceback__ = None  # let the frames (and whatever filled the memory) go
    gc.collect()
    return outcome


def is_clean_exit(exc: BaseException) -> bool:
    return isinstance(exc, SystemExit) and exc.code in (None, 0)


def preloaded(modules: list, builtin_names) -> dict:
    """`from m import *` for each module, then `import m` (livecodebench's order, so the
    module wins over a same-named export); a name that would shadow a builtin (math.pow,
    re.compile, io.open) is left out, as `from builtins import *` does in their prelude."""
    names, imported = {}, {}
    for name in modules:
        module = imported[name] = importlib.import_module(name)
        public = getattr(module, "__all__", None) or [attr for attr in vars(module) if not attr.startswith("_")]
        names.update(
            {attr: getattr(module, attr) for attr in public if attr not in builtin_names and hasattr(module, attr)}
        )
    return {**names, **imported}


def code_builtins(job: dict) -> dict:
    if "python_guards" in job["disabled"]:
        return dict(vars(builtins))  # the test-only knob: the real ones, eval and open included
    return guards.user_builtins(frozenset(job["allowed_imports"]), job["scratch"], job["allow_open"])


def run_module(job: dict, name: str) -> tuple[dict | None, dict | None]:
    """Execute the code as a module: (its namespace, None), or (None, the failure to report).
    A program may end itself with exit(0); a module whose functions are to be called may not."""
    source = job["source"]
    linecache.cache[FILENAME] = (len(source), None, source.splitlines(True), FILENAME)
    user_builtins = code_builtins(job)
    namespace = {"__name__": name, "__builtins__": user_builtins}
    if job["recursion_limit"]:
        sys.setrecursionlimit(job["recursion_limit"])
    try:
        namespace.update(preloaded(job["preloaded_modules"], {*user_builtins, *guards.REMOVED_BUILTINS}))
        exec(compile(source, FILENAME, "exec"), namespace)
    except BaseException as exc:  # noqa: B036 - everything the code raises is its verdict
        if not (name == "__main__" and is_clean_exit(exc)):
            return None, {"kind": "end", **report_exception(exc, print_traceback=name == "__main__")}
    return namespace, None


def on_call_timer(signum, frame):
    raise CallTimeout()


def run_call(function, index: int, call, timeout_s, max_value_bytes: int) -> dict:
    args, kwargs = (call, {}) if isinstance(call, list) else ([], call)
    started = time.perf_counter()
    if timeout_s:
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        try:
            value = function(*args, **kwargs)
        finally:  # inside the outer try: a timer firing right here is still this call's timeout
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # noqa: B036 - the code's own failure, reported on this call
        outcome = report_exception(exc, print_traceback=False)
        return {"kind": "call", "index": index, "duration_s": time.perf_counter() - started, **outcome}
    record = {"kind": "call", "index": index, "duration_s": time.perf_counter() - started}
    try:
        value_json = DUMPS(value)
    except Exception as exc:  # sets, objects, circular lists: the code's error, not the runner's
        problem = f"the return value is not JSON-serialisable ({type(exc).__name__}: {exc})"
        return {**record, "status": "error", "reason": "value", "error": problem}
    if len(value_json) > max_value_bytes:
        problem = f"the return value takes {len(value_json)} bytes as JSON, over the {max_value_bytes} allowed"
        return {**record, "status": "error", "reason": "value", "error": problem}
    return {**record, "status": "ok", "value_json": value_json}


def serve_function(job: dict, reporter) -> None:
    namespace, failure = run_module(job, "__sandbox__")
    if failure:
        reporter.send(failure)
        return
    function = namespace.get(job["function_name"])
    if not callable(function):
        reporter.send({"kind": "end", "status": "error", "reason": "missing_function",
                       "error": f"the code defines no function named '{job['function_name']}'"})  # fmt: skip
        return
    signal.signal(signal.SIGALRM, on_call_timer)
    reporter.send({"kind": "calls"})  # from here on, a death is some call's fault
    for index, call in reporter.requests():
        reporter.send(run_call(function, index, call, job["call_timeout_s"], job["max_value_bytes"]))
    reporter.send({"kind": "end", "status": "ok"})


def serve(job: dict, reporter) -> int:
    """Run the job; returns the exit status (1 after a program's failure)."""
    reporter.send({"kind": "ready", "isolation": close_doors(job)})
    if job["mode"] == "function":
        serve_function(job, reporter)
        return 0
    namespace, failure = run_module(job, "__main__")
    reporter.send(failure or {"kind": "end", "status": "ok"})
    return 1 if failure else 0
