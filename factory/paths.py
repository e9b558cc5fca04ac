"""Where the shipped data folders (prompts/, personas/) live.

In a checkout or an editable install they sit at the repository root, beside
the package; a built wheel carries them inside the package as factory/_data/.
"""

from __future__ import annotations

from pathlib import Path

from .errors import FactoryError

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder `name` (e.g. "prompts"), wherever the install put it."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FactoryError(f"data folder '{name}' not found next to {_PACKAGE_DIR}; reinstall the package")


def prompts_dir() -> Path:
    return data_dir("prompts")


def personas_dir() -> Path:
    return data_dir("personas")
