"""The Python-level runtime guards: what the generated code finds in its builtins
and in the os module. They catch the plain attempts with a clear message; the
kernel layers (rlimits, Landlock, seccomp, network namespace) hold when these
are walked around."""

from __future__ import annotations

import builtins
import os

SAFE_DUNDERS = frozenset({"__name__", "__main__", "__init__"})
REMOVED_BUILTINS = ("eval", "exec", "compile", "globals", "locals", "vars", "breakpoint", "help", "open")

# Process creation, signals and session changes; patched in os and in posix,
# since os re-exports posix's functions and either would do.
BLOCKED_OS_FUNCTIONS = (
    "system", "popen", "fork", "forkpty", "execv", "execve", "execl", "execle", "execlp", "execlpe",
    "execvp", "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp", "kill", "killpg", "setsid", "setpgid", "chroot",
    "unshare", "setns",
)  # fmt: skip


def is_dunder(name: object) -> bool:
    return isinstance(name, str) and len(name) > 4 and name.startswith("__") and name.endswith("__")


def refuse(what: str):
    def refused(*args, **kwargs):
        raise PermissionError(f"{what} is not allowed in the sandbox")

    refused.__name__ = what.replace(".", "_")
    return refused


def patch_os() -> None:
    import _posixsubprocess
    import posix

    for module in (os, posix):
        for name in BLOCKED_OS_FUNCTIONS:
            if hasattr(module, name):
                setattr(module, name, refuse(f"{module.__name__}.{name}"))
    _posixsubprocess.fork_exec = refuse("starting a process")


def guarded_import(allowed: frozenset[str]):
    real_import = builtins.__import__

    def sandbox_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError("relative imports are not allowed in the sandbox")
        if name.partition(".")[0] not in allowed:
            raise ImportError(f"import of '{name}' is not allowed in the sandbox")
        return real_import(name, globals, locals, fromlist, level)

    return sandbox_import


def guarded_name_access(real):
    def name_access(obj, name, *rest):
        if is_dunder(name) and name not in SAFE_DUNDERS:
            raise PermissionError(f"access to attribute '{name}' is not allowed in the sandbox")
        return real(obj, name, *rest)

    name_access.__name__ = real.__name__
    return name_access


def scratch_open(scratch: str):
    real_open = builtins.open
    root = os.path.realpath(scratch)

    def sandbox_open(file, mode="r", *args, **kwargs):
        if not isinstance(file, (str, bytes, os.PathLike)):
            raise PermissionError("open() takes a path inside the scratch directory")
        path = os.path.realpath(os.path.join(root, os.fsdecode(file)))
        if path != root and not path.startswith(root + os.sep):
            raise PermissionError(f"open() outside the scratch directory is not allowed: {os.fsdecode(file)}")
        return real_open(path, mode, *args, **kwargs)

    return sandbox_open


def user_builtins(allowed_imports: frozenset[str], scratch: str, allow_open: bool) -> dict:
    """The builtins the generated code runs with: a copy, so the standard library
    keeps the real ones."""
    namespace = dict(vars(builtins))
    for name in REMOVED_BUILTINS:
        namespace.pop(name, None)
    namespace["__import__"] = guarded_import(allowed_imports)
    for name in ("getattr", "setattr", "delattr", "hasattr"):
        namespace[name] = guarded_name_access(getattr(builtins, name))
    if allow_open:
        namespace["open"] = scratch_open(scratch)
    return namespace
