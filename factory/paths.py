"""Where the shipped data folders (prompts/, personas/) live, and making the folders a command writes to.

In a checkout or an editable install they sit at the repository root, beside
the package; a built wheel carries them inside the package as factory/_data/.
"""

from __future__ import annotations

import os
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


def make_folder(folder: Path, what: str = "run folder") -> Path:
    """Make `folder` (and its parents) for writing, or one line: a file in the way, a place the OS refuses
    (/proc, a read-only mount), no permission."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise FactoryError(f"cannot create {what} {folder}: a file is in the way") from None
    except OSError as exc:
        raise FactoryError(f"cannot create {what} {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise FactoryError(f"cannot write to {what} {folder}: permission denied")
    return folder
