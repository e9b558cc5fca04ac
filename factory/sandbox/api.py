"""The entry points: `run_program` / `run_function` and their async twins.

The async functions are the implementation (many sandboxes share one event loop
in a batch job); the sync ones run them on a private loop, in a helper thread
when the calling thread already has a loop running.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import py_compile
import shutil
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Coroutine

from pydantic import ValidationError

from .capabilities import landlock_abi, namespace_support
from .child import seccomp
from .containment import refusal
from .forkserver import server_for
from .layers import disabled_layers
from .models import CallResult, SandboxLimits, SandboxResult
from .process import Launch, ScratchWatch, supervise
from .result import make_result
from .static_check import check_source

RUNNER = Path(__file__).parent / "child" / "start.py"
CallArgs = list | dict  # positional arguments, or keyword arguments


def child_env(scratch: str) -> dict[str, str]:
    """Nothing of the parent's environment: no keys, no proxies, no PYTHONPATH."""
    return {
        "PATH": "/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "TZ": "UTC",
        "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    }  # fmt: skip


@functools.cache  # asked twice per run (the job, the fork server's view); fixed for the process
def library_paths() -> list[str]:
    # The child starts with -S (no site), so third-party modules such as numpy
    # are found only through these; the import allowlist decides what is used.
    paths = sysconfig.get_paths()
    return sorted({paths["purelib"], paths["platlib"]})


@functools.cache
def compile_child() -> None:
    """The child's modules as cached bytecode beside them, checked once per process.

    The child runs with PYTHONDONTWRITEBYTECODE (the code it runs must leave nothing behind),
    so where no install step compiled them (an editable install, pip --no-compile) it would
    compile them from source at every run: 12 of a 56 ms `print(1)` (benchmarks/sandbox_overhead.py).
    A folder we cannot write leaves them as they are.
    """
    from importlib.util import cache_from_source

    for source in RUNNER.parent.glob("*.py"):
        cached = Path(cache_from_source(str(source)))
        try:
            if not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime:
                py_compile.compile(str(source), cfile=str(cached), doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue


def child_argv(job_path: Path, layers: dict) -> list[str]:
    # Not -I: it implies -E, which would drop PYTHONHASHSEED. The environment is
    # built from nothing instead, so -E would have nothing left to protect.
    spaces = [
        flag for flag, on in (("--mount", layers["mount_namespace"]), ("--net", layers["network_namespace"])) if on
    ]
    prefix = (*namespace_support()[0], *spaces) if spaces else ()
    compile_child()
    return [*prefix, sys.executable, "-s", "-S", str(RUNNER), str(job_path)]


def launch(job_dir: Path, layers: dict, disabled: tuple[str, ...], stdin_path: str | None) -> Launch:
    """A fresh Python's argv, and the same run as a fork server's request where one answers."""
    scratch, job = str(job_dir / "scratch"), job_dir / "job.json"
    env, argv = child_env(scratch), child_argv(job, layers)
    base = namespace_support()[0]  # ("unshare",) as root, ("unshare", "--map-root-user") for an ordinary user
    user = base if len(base) > 1 else ()  # the server needs the user namespace alone: runs enter the others
    top = "/" + os.path.realpath(job_dir).strip("/").split("/")[0]  # the server's view shows it whole
    # A server's view is a copy of the mounts it started with: a job folder on a file system mounted later
    # (a TMPDIR on its own small disk, say) is not in it, so such a run hides the host itself.
    shared_view = layers["mount_namespace"] and "host_view" not in disabled and same_mount(job_dir, top)
    view = json.dumps({"extra_paths": library_paths(), "tmp_root": top}) if shared_view else None
    server = server_for(user, child_env(tempfile.gettempdir()), view)
    request = {"job": str(job), "env": env, "cwd": scratch,
               "mount": layers["mount_namespace"], "net": layers["network_namespace"]}  # fmt: skip
    return Launch(argv, env, scratch, stdin_path, (server, request) if server else None)


def same_mount(path: Path, top: str) -> bool:
    return os.stat(path).st_dev == os.stat(top).st_dev


def kernel_layers(disabled: tuple[str, ...] = ()) -> dict[str, bool]:
    """The kernel layers a run gets here, less the `disabled` ones: read once per run, for
    the containment rule and for the child's job alike, so that the two can never disagree."""
    spaces = namespace_support()[1]
    offered = {"network_namespace": "net" in spaces, "mount_namespace": "mount" in spaces,
               "landlock": landlock_abi() > 0, "seccomp": seccomp.supported()}  # fmt: skip
    return {name: on and name not in disabled for name, on in offered.items()}


def sandbox_refusal() -> str | None:
    """Why generated code may not run on this machine (a layer the kernel lacks), or None;
    see containment.py. Callers that judge code ask first, to record an error, not a score."""
    try:
        disabled = disabled_layers()
    except ValueError as exc:
        return str(exc)
    return refusal(kernel_layers(disabled), waived=disabled)


def job_payload(
    source: str, limits: SandboxLimits, job_dir: Path, layers: dict[str, bool], disabled: tuple[str, ...], **mode: Any
) -> dict:
    """Everything the child needs but the calls' arguments (calls.json, which only the runner reads)."""
    return {
        "source": source, "scratch": str(job_dir / "scratch"), "result_path": str(job_dir / "result.jsonl"),
        "calls_path": str(job_dir / "calls.json"), "extra_paths": library_paths(),
        "allowed_imports": list(limits.allowed_imports), "allow_open": limits.allow_scratch_files,
        "preloaded_modules": list(limits.preloaded_modules), "recursion_limit": limits.recursion_limit,
        "cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "file_size_mb": limits.file_size_mb,
        "max_processes": limits.max_processes, "max_value_bytes": limits.max_output_bytes,
        "scratch_mb": limits.scratch_mb, "scratch_files": limits.scratch_files, "disabled": list(disabled),
        **layers, "function_name": None, "call_timeout_s": None, **mode,
    }  # fmt: skip


def failed(reason: str, message: str, n_calls: int = 0) -> SandboxResult:
    """An error verdict for a run that never started (bad input, no scratch space)."""
    return with_calls(SandboxResult(status="error", reason=reason, error=message), n_calls)


def with_calls(verdict: SandboxResult, n_calls: int) -> SandboxResult:
    """Give every call the verdict of a run that never reached them."""
    verdict.calls = [
        CallResult(index=i, status=verdict.status, reason=verdict.reason, error=f"not run: {verdict.error}")
        for i in range(n_calls)
    ]
    return verdict


async def run_job(source: object, limits: SandboxLimits | dict | None, stdin: object, n_calls: int,
                  skip_static_check: bool, **mode: Any) -> SandboxResult:  # fmt: skip
    try:
        limits = SandboxLimits.model_validate(limits if limits is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        return failed("input", f"bad limits: {'.'.join(map(str, first['loc']))}: {first['msg']}", n_calls)
    if not isinstance(source, str):
        return failed("input", f"source must be a str, not {type(source).__name__}", n_calls)
    try:
        disabled = disabled_layers()
    except ValueError as exc:
        return failed("input", str(exc), n_calls)
    layers = kernel_layers(disabled)
    refused = refusal(layers, waived=disabled)  # before the static check: nothing is judged where nothing is contained
    if refused:
        return failed("isolation", refused, n_calls)
    if not skip_static_check and "static_check" not in disabled:
        issue = check_source(source, limits.allowed_imports, limits.allow_scratch_files)
        if issue:
            return with_calls(SandboxResult(status=issue.status, reason=issue.reason, error=issue.text), n_calls)
    try:
        job_dir = Path(tempfile.mkdtemp(prefix="factory-sandbox-"))
    except OSError as exc:
        return failed("sandbox", f"no scratch directory: {exc}", n_calls)
    try:
        return await run_in(job_dir, source, limits, stdin, n_calls, {**mode, "layers": layers, "disabled": disabled})
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)


def write_job(job_dir: Path, source: str, limits: SandboxLimits, stdin: object, mode: dict) -> Path | None:
    """job.json, calls.json (and the stdin file, if any) beside the scratch directory, where
    the child can read them before Landlock and not after; readable by their owner only, in a
    folder others may pass through (to the scratch directory) but not list. Returns the stdin path."""
    (job_dir / "scratch").mkdir()
    job_dir.chmod(0o711)
    calls = mode.pop("calls", None)
    owner_only(job_dir / "calls.json", json.dumps(calls).encode("utf-8"))
    owner_only(job_dir / "job.json", json.dumps(job_payload(source, limits, job_dir, **mode)).encode("utf-8"))
    if stdin is None:
        return None
    owner_only(job_dir / "stdin", stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin))
    return job_dir / "stdin"


def owner_only(path: Path, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
        handle.write(data)


async def run_in(
    job_dir: Path, source: str, limits: SandboxLimits, stdin: object, n_calls: int, mode: dict
) -> SandboxResult:
    try:
        stdin_path = write_job(job_dir, source, limits, stdin, mode)
    except (TypeError, ValueError) as exc:
        return failed("input", f"the call arguments are not JSON-serialisable: {exc}", n_calls)
    except OSError as exc:
        return failed("sandbox", f"could not write the job: {exc}", n_calls)
    try:
        raw = await supervise(
            launch(job_dir, mode["layers"], mode["disabled"], str(stdin_path) if stdin_path else None), limits.wall_s,
            limits.max_output_bytes, str(job_dir / "result.jsonl"), max_result_bytes=limits.file_size_mb * 1024 * 1024,
            scratch_watch=fallback_quota(job_dir / "scratch", limits, mode),
        )  # fmt: skip
    except OSError as exc:  # the child could not start at all (no executable, no fds)
        return failed("sandbox", f"could not start the sandbox: {exc}", n_calls)
    return make_result(raw, limits, n_calls)


def fallback_quota(scratch: Path, limits: SandboxLimits, mode: dict) -> ScratchWatch | None:
    """Where the child gets no mount namespace (no tmpfs of its own), the parent watches its scratch."""
    if mode["layers"]["mount_namespace"] or "scratch_quota" in mode["disabled"]:
        return None
    return ScratchWatch(str(scratch), limits.scratch_mb * 1024 * 1024, limits.scratch_files)


async def arun_program(source: str, stdin: str | bytes | None = None, limits: SandboxLimits | None = None,
                       *, _skip_static_check: bool = False) -> SandboxResult:  # fmt: skip
    """Run `source` as a program with `stdin`; the verdict carries its stdout and stderr."""
    if stdin is not None and not isinstance(stdin, (str, bytes)):
        return failed("input", f"stdin must be str or bytes, not {type(stdin).__name__}")
    return await run_job(source, limits, stdin, 0, _skip_static_check, mode="program")


async def arun_function(
    source: str, function_name: str, calls: list[CallArgs], limits: SandboxLimits | None = None,
    *, call_timeout_s: float | None = None, _skip_static_check: bool = False,
) -> SandboxResult:  # fmt: skip
    """Define `source`, then call `function_name` once per entry of `calls` (a list
    of positional arguments or a dict of keyword arguments), all in one child.
    `verdict.calls[i]` is call i's own verdict; `verdict.status` is the run's."""
    if not isinstance(calls, list) or not all(isinstance(call, (list, dict)) for call in calls):
        return failed("input", "calls must be a list of argument lists or keyword dicts")
    if not isinstance(function_name, str) or not function_name.isidentifier():
        return failed("input", f"function_name must be an identifier, not {function_name!r}", len(calls))
    if call_timeout_s is not None and not (isinstance(call_timeout_s, (int, float)) and call_timeout_s > 0):
        return failed("input", f"call_timeout_s must be a positive number, not {call_timeout_s!r}", len(calls))
    return await run_job(
        source, limits, None, len(calls), _skip_static_check,
        mode="function", function_name=function_name, calls=calls, call_timeout_s=call_timeout_s,
    )  # fmt: skip


def run_sync(coroutine: Coroutine[Any, Any, SandboxResult]) -> SandboxResult:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # Called from async code: asyncio.run would refuse, so give it a thread of its own.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox") as worker:
        return worker.submit(asyncio.run, coroutine).result()


def run_program(source: str, stdin: str | bytes | None = None, limits: SandboxLimits | None = None,
                *, _skip_static_check: bool = False) -> SandboxResult:  # fmt: skip
    return run_sync(arun_program(source, stdin, limits, _skip_static_check=_skip_static_check))


def run_function(source: str, function_name: str, calls: list[CallArgs], limits: SandboxLimits | None = None,
                 *, call_timeout_s: float | None = None,
                 _skip_static_check: bool = False) -> SandboxResult:  # fmt: skip
    return run_sync(
        arun_function(
            source, function_name, calls, limits, call_timeout_s=call_timeout_s, _skip_static_check=_skip_static_check
        )
    )
