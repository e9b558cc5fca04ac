"""Which kernel layers a run of generated code needs, and what happens without them.

The Python layers (the static check, the child's guards) are not a boundary for
any import profile. `sys` is one plain attribute away from nearly every module
of the default profile (`datetime.sys`, `collections._sys`, `re.enum.sys`,
`fractions.sys`, `json.codecs.builtins`, `dataclasses.builtins`, `random._os`),
and `sys.modules["importlib"].import_module("ctypes")` reaches libc's system().
So there is no "guard-safe" allowlist to fall back to: containment is the
kernel's, for every run.

The rule: generated code runs only where both of these apply —
- Landlock (any ABI): the filesystem. Reads only Python's own files, writes only
  the scratch directory. Below ABI 3 Landlock does not govern truncate(2), so
  the seccomp filter denies that call (ftruncate needs an fd opened for writing,
  which Landlock does govern).
- seccomp: no new processes, no exec, no socket() at all, no signals out (and
  the rest of issue 14's list: metadata, reboot, scheduling, ids...). Its socket
  rule is what keeps a run off the network, so the network namespace and
  Landlock's TCP rules (ABI 4) are extra depth, used where present, not
  required; so are the unprivileged worker and the scratch tmpfs.

Where one is missing, nothing runs: the verdict is `error/isolation`, naming
what the kernel lacks (a checker records it as an error, never as a score). The
operator of such a machine may accept uncontained runs for their own code with
FACTORY_SANDBOX_UNCONTAINED=1; a warning then says so once per process. A layer
the test-only FACTORY_SANDBOX_DISABLE switches off (layers.py) is waived here:
the test chose to run without it.
"""

from __future__ import annotations

import logging
import os

UNCONTAINED_ENV = "FACTORY_SANDBOX_UNCONTAINED"
REQUIRED_LAYERS = {
    "landlock": "Landlock (the filesystem)",
    "seccomp": "seccomp (processes, exec, sockets)",
}

log = logging.getLogger(__name__)
_warned: set[str] = set()


def missing_layers(layers: dict[str, bool], waived: tuple[str, ...] = ()) -> list[str]:
    """The required layers `layers` (name -> offered by this kernel) lacks, described;
    `waived` ones (switched off by FACTORY_SANDBOX_DISABLE, see layers.py) are not required."""
    return [text for name, text in REQUIRED_LAYERS.items() if not layers.get(name) and name not in waived]


def uncontained_allowed() -> bool:
    return os.environ.get(UNCONTAINED_ENV, "").strip().lower() in ("1", "true", "yes")


def refusal(layers: dict[str, bool], waived: tuple[str, ...] = ()) -> str | None:
    """The one-line reason a run must not start here, or None when it may."""
    missing = missing_layers(layers, waived)
    if not missing:
        return None
    lacks = " and ".join(missing)
    if uncontained_allowed():
        warn_once(
            f"{UNCONTAINED_ENV} is set and this kernel lacks {lacks}: generated code runs UNCONTAINED "
            "(the Python guards alone are not a boundary)"
        )
        return None
    return (
        f"not run: this kernel lacks {lacks}, which contain generated code "
        f"(set {UNCONTAINED_ENV}=1 to run it uncontained on a machine you accept to risk)"
    )


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)
