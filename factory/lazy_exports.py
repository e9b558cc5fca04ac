"""Package attributes imported on first use (PEP 562), so importing a package costs only what it uses.

`import factory.config` runs factory/__init__.py first, and every `factory <command>` imports
each package's command module to build its parser: a package __init__ that imported its whole
API would load the LLM client, DuckDB, pyarrow and the Hub client for a `--help`. A package
names its public attributes and the submodule each comes from; `from factory.export import
export_dataset` works as before, and only then imports factory.export.dataset.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType


def lazy_exports(package: str, exports: Mapping[str, tuple[str, ...]]) -> tuple[Callable, Callable]:
    """The package's `__getattr__` and `__dir__`, for `exports`: relative submodule -> names it provides."""
    source = {name: submodule for submodule, names in exports.items() for name in names}
    module = sys.modules[package]

    def __getattr__(name: str):
        if name not in source:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source[name], package), name)
        module.__dict__[name] = value  # once: later lookups do not come back here
        return value

    def __dir__() -> list[str]:
        return sorted({*module.__dict__, *source})

    shadowed = {name for name, submodule in source.items() if submodule == f".{name}"}
    if shadowed:
        module.__class__ = _keeping_names(shadowed)
    return __getattr__, __dir__


def _keeping_names(shadowed: set[str]) -> type[ModuleType]:
    """A function named like its own submodule (factory.export.publish.publish): importing the
    submodule binds the module under that name on the package; keep the name for the function,
    as the eager `from .publish import publish` did."""

    class KeepsExportedNames(ModuleType):
        def __setattr__(self, name: str, value: object) -> None:
            if name in shadowed and isinstance(value, ModuleType):
                return
            super().__setattr__(name, value)

    return KeepsExportedNames
