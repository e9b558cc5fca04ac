"""Prompt templates are files under prompts/, loaded by name (DESIGN rule 5)."""

from __future__ import annotations

import hashlib
from functools import lru_cache

from .errors import FactoryError
from .paths import prompts_dir


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """Load prompts/<name>.md (e.g. "smoke/system")."""
    path = prompts_dir() / f"{name}.md"
    if not path.is_file():
        raise FactoryError(f"prompt '{name}' not found: expected {path}")
    return path.read_text(encoding="utf-8").strip()


def render_prompt(name: str, **values: object) -> str:
    """Fill a template's {placeholders}; a missing value is an error, not a blank."""
    template = load_prompt(name)
    try:
        return template.format(**values)
    except KeyError as exc:
        raise FactoryError(f"prompt '{name}' needs a value for {exc}") from None


def prompt_hash(name: str) -> str:
    """A short hash of a template, recorded as provenance."""
    return hashlib.sha256(load_prompt(name).encode()).hexdigest()[:12]
