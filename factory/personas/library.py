"""The persona library shipped in personas/library.jsonl (see personas/README.md)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from ..errors import FactoryError
from ..paths import personas_dir
from .model import Persona

LIBRARY_FILE = "library.jsonl"
LIBRARY_SOURCE = "factory-library-v1"


def library_path() -> Path:
    return personas_dir() / LIBRARY_FILE


def load_library() -> list[Persona]:
    """The shipped personas, in file order (ids p0001, p0002, ...), with their tags."""
    return list(_cached_library(str(library_path())))


@lru_cache(maxsize=2)
def _cached_library(path: str) -> tuple[Persona, ...]:
    # Personas are frozen, so every caller can share one parsed copy.
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise FactoryError(f"{path}: cannot read the persona library ({why}); reinstall the package") from None
    return tuple(_library_row(path, number, line) for number, line in enumerate(lines, 1) if line.strip())


def _library_row(path: str, number: int, line: str) -> Persona:
    try:
        row = json.loads(line)
        return Persona(id=row["id"], text=row["persona"], source=row["source"], tags=row.get("tags") or {})
    except json.JSONDecodeError as exc:
        raise FactoryError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    except KeyError as exc:
        raise FactoryError(f"{path}:{number}: missing field {exc}") from None
    except (TypeError, AttributeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise FactoryError(f"{path}:{number}: bad persona row ({first})") from None
