"""The sandbox's settings (`SandboxLimits`) and its answers (`SandboxResult`, `CallResult`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ..config import StrictModel

Status = Literal["ok", "rejected", "error", "timeout", "killed"]

# What generated code may import by default: pure computation, no I/O. numpy and
# sympy are listed so that they work where installed; elsewhere the import fails
# inside the sandbox like any other missing module.
DEFAULT_ALLOWED_IMPORTS: tuple[str, ...] = (
    "math", "cmath", "fractions", "decimal", "numbers", "statistics", "random",
    "itertools", "functools", "operator", "collections", "heapq", "bisect", "array",
    "re", "string", "textwrap", "json", "datetime", "typing", "dataclasses", "enum",
    "copy", "numpy", "sympy",
)  # fmt: skip

# What livecodebench's and AFM's evaluators put before every solution, as `import m`
# and `from m import *` (AFM: verl/verl/utils/reward_score/lcb.py), less `builtins`,
# which would hand back the real eval and open.
CONTEST_PRELUDE: tuple[str, ...] = (
    "string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
    "itertools", "functools", "operator", "io", "sys", "json", "typing",
)  # fmt: skip

# The code-task profile: the standard library that competitive programs use (stdin
# through sys and io included), for the code tool and the code checker alike. The
# Python layer cannot contain `sys` (sys.modules holds every loaded module), nor can
# it contain the default profile, whose modules hand sys out as an attribute; the
# kernel layers do, and a run needs them (containment.py). Prompts render this
# constant as the code agent's module list.
# `time` too: a careful solution times itself on a large input (issue 25); its clocks and sleep are bounded
# by the sandbox's own CPU and wall limits.
CODE_TASK_IMPORTS: tuple[str, ...] = tuple(dict.fromkeys((*CONTEST_PRELUDE, *DEFAULT_ALLOWED_IMPORTS, "time")))


class SandboxLimits(StrictModel):
    cpu_s: float = Field(5, gt=0, description="CPU seconds (RLIMIT_CPU, rounded up); over it: timeout/cpu")
    wall_s: float = Field(10, gt=0, description="wall-clock seconds, enforced by the parent; over it: timeout/wall")
    memory_mb: int = Field(512, ge=64, description="address space (RLIMIT_AS) of the child")
    file_size_mb: int = Field(16, ge=1, description="largest file the child may write (RLIMIT_FSIZE)")
    # Not RLIMIT_NPROC: it counts every process of the user (the parent's too) and
    # does nothing for root. The seccomp filter enforces this instead, as a switch.
    max_processes: int = Field(
        1,
        ge=1,
        le=64,
        description="1: a single thread; above 1: threads allowed (bounded by memory_mb, not counted). "
        "New processes are never allowed.",
    )
    scratch_mb: int = Field(
        64, ge=1, le=65536, description="size of the scratch tmpfs; full: the code's own OSError (ENOSPC)"
    )
    scratch_files: int = Field(1024, ge=16, description="files and folders the scratch tmpfs holds")
    max_output_bytes: int = Field(1_000_000, ge=1024, description="cap on stdout and on stderr, each")
    allowed_imports: tuple[str, ...] = Field(DEFAULT_ALLOWED_IMPORTS, description="top-level module names")
    allow_scratch_files: bool = Field(False, description="let the code call open() inside its scratch directory")
    preloaded_modules: tuple[str, ...] = Field(
        (),
        description="imported into the code's namespace before it runs, as `import m` and `from m import *` "
        "(names that would shadow a builtin are left out); each must be in allowed_imports",
    )
    recursion_limit: int | None = Field(
        None, ge=100, le=10_000_000, description="sys.setrecursionlimit before the code (None: Python's own)"
    )

    @model_validator(mode="after")
    def preloaded_are_allowed(self) -> SandboxLimits:
        outside = [name for name in self.preloaded_modules if name not in self.allowed_imports]
        if outside:
            raise ValueError(f"preloaded_modules not in allowed_imports: {', '.join(outside)}")
        return self


class CallResult(BaseModel):
    """One call of a function run by `run_function`."""

    index: int
    status: Status
    value: Any = None  # JSON-decoded: tuples come back as lists
    error: str | None = None
    reason: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class SandboxResult(BaseModel):
    """What happened to one sandboxed run; see the package docstring for the mapping."""

    status: Status
    reason: str | None = None  # a short code: import, syntax, exception, memory, wall, cpu, output, ...
    error: str | None = None  # one line, "line N: ..." where a line of the code is to blame
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    value: Any = None
    calls: list[CallResult] = Field(default_factory=list)
    exit_code: int | None = None
    signal: str | None = None
    duration_s: float = 0.0
    isolation: dict[str, Any] = Field(default_factory=dict)  # the layers the child really applied

    @property
    def ok(self) -> bool:
        return self.status == "ok"
