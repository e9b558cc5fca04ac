"""FACTORY_SANDBOX_DISABLE: a test-only switch that leaves layers out of a run.

The hostile tests prove each layer by switching it off and watching the attack
get through; nobody else should set it. It is read by the parent on every run;
a disabled layer is not applied (a run with landlock or seccomp disabled is not
refused by the containment rule: the switch is the caller's explicit choice),
and `SandboxResult.isolation["disabled"]` lists what was left out.
"""

from __future__ import annotations

import os

DISABLE_ENV = "FACTORY_SANDBOX_DISABLE"
SWITCHABLE = ("static_check", "python_guards", "landlock", "seccomp", "privileges", "scratch_quota",
              "result_channel", "network_namespace", "host_view")  # fmt: skip


def disabled_layers() -> tuple[str, ...]:
    """The layers switched off for this run; ValueError naming any unknown one."""
    names = [name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",") if name.strip()]
    unknown = [name for name in names if name not in SWITCHABLE]
    if unknown:
        raise ValueError(f"{DISABLE_ENV} names unknown layers: {', '.join(unknown)} (known: {', '.join(SWITCHABLE)})")
    return tuple(dict.fromkeys(names))
