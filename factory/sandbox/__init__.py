"""factory.sandbox — the only way generated code runs.

    run_program(source, stdin=None, limits=None) -> SandboxResult        (and arun_program)
    run_function(source, name, calls, limits=None, call_timeout_s=None) -> SandboxResult
                                                                    (and arun_function)
    sandbox_capabilities() -> dict   the kernel layers this machine offers

Layers, each assuming the one before was bypassed:
1. static check (`static_check.py`): imports outside `allowed_imports`, dunder
   names and attributes, eval/exec/compile/open/globals/locals/vars, getattr
   with a non-literal name, frame/code introspection -> "rejected".
2. Python guards in the child (`child/guards.py`): a private builtins dict
   (import allowlist, dunder-refusing getattr, no eval/exec/open), os/posix
   process and signal functions replaced by ones that raise PermissionError.
3. The kernel: its own process and session (`killpg` on timeout), a fresh
   scratch cwd deleted afterwards, an environment built from nothing, rlimits
   (CPU, address space, file size, open files, no core), and, where the kernel
   offers them: a mount and an empty network namespace (`unshare --mount --net`),
   a view of the host's files that shows only what the code may read (`host_view`),
   a size- and inode-capped tmpfs on scratch (`scratch_mb`, `scratch_files`; the
   parent watches the directory where no tmpfs can be had), a worker process
   that runs as `nobody` with no capabilities and no_new_privs, Landlock (read
   only Python's files, write only the scratch directory, no TCP, no signals
   out), and a seccomp denylist (no new processes, no exec, no socket(), no
   chmod/chown/utime/xattr, no reboot/hostname/syslog/scheduling/ids...).
4. The result channel: a trusted runner holds the result file and asks the
   worker for each call (arguments and a nonce sent only then); what the code
   writes out of turn makes the run error/tampered.
`sandbox_capabilities()` and `SandboxResult.isolation` say what held; docs/sandbox.md
has the details and FACTORY_SANDBOX_DISABLE, the test-only switch (layers.py).

Containment (`containment.py`): layers 1 and 2 are not a boundary for any import
profile (`datetime.sys`, `dataclasses.builtins`, `random._os` hand out what the
allowlist leaves out), so generated code runs only where Landlock and seccomp
both apply; elsewhere the verdict is error/isolation and nothing runs
(`sandbox_refusal()` says why; FACTORY_SANDBOX_UNCONTAINED=1 overrides, warned
once per process).

Import profiles: `DEFAULT_ALLOWED_IMPORTS` (pure computation) and
`CODE_TASK_IMPORTS` (what competitive programs use, sys and io included; the code
tool and the code checker; prompts render it). `SandboxLimits.preloaded_modules`
runs livecodebench's prelude (`CONTEST_PRELUDE`) before the code.

SandboxResult mapping (`status` / `reason`):
- ok: the code ran to the end (a program's SystemExit(0) included) and the process
  exited with status 0. For run_function the run's status; each `calls[i]` has
  its own ok / error / timeout.
- rejected / import | dunder | builtin | attribute: the static check refused
  it; `error` is "line N: ...". Nothing ran.
- error / syntax: the code does not parse (line given when known).
- error / exception | recursion | memory | exit_code | value: the code raised
  (an uncaught exception, RecursionError, MemoryError from the address-space
  limit, SystemExit with a non-zero code, a return value json cannot carry);
  `error` is "line N: Type: message", the traceback is in stderr (programs).
- error / missing_function | input | sandbox: no such function, bad arguments
  from the caller (or an unknown name in FACTORY_SANDBOX_DISABLE), the child
  could not start or report, or its records could not be read.
- error / scratch: past the scratch quota where the parent watches it (with the
  tmpfs, a full scratch is the code's own OSError: error / exception).
- error / isolation: this kernel lacks a layer that contains generated code
  (Landlock, seccomp); nothing ran, nothing was checked.
- error / exit_code (also for SystemExit(0) while run_function's module is being
  defined, or inside a call), early_exit (the process ended with status 0 before
  the runner reported: os._exit), tampered (the code wrote to the result channel
  out of turn, or a reply without the request's nonce). See result.py and
  child/runner.py.
- timeout / wall: past `wall_s` (the parent kills the process group).
- timeout / cpu: past `cpu_s` (SIGXCPU from RLIMIT_CPU).
- timeout / call_wall: one call past `call_timeout_s` (per call only).
- killed / output: stdout or stderr past `max_output_bytes`; the parent kills
  the child and keeps the first `max_output_bytes` plus a truncation marker.
- killed / signal: any other fatal signal (SIGKILL from the OOM killer, SIGSEGV).
Calls a run never reached get the run's status with reason "not_run".
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".api": ("arun_function", "arun_program", "run_function", "run_program", "sandbox_refusal"),
        ".capabilities": ("sandbox_capabilities",),
        ".models": (
            "CODE_TASK_IMPORTS",
            "CONTEST_PRELUDE",
            "DEFAULT_ALLOWED_IMPORTS",
            "CallResult",
            "SandboxLimits",
            "SandboxResult",
        ),
        ".static_check": ("StaticIssue", "check_source"),
    },
)

__all__ = [
    "CODE_TASK_IMPORTS", "CONTEST_PRELUDE", "DEFAULT_ALLOWED_IMPORTS", "CallResult", "SandboxLimits", "StaticIssue",
    "SandboxResult", "arun_function", "arun_program", "check_source", "run_function", "run_program",
    "sandbox_capabilities", "sandbox_refusal",
]  # fmt: skip
