"""Prompt templates are files under prompts/, loaded by name (DESIGN rule 5).

A run's config may name a `prompts_dir`: its files override the shipped ones by the
same relative name (`<dir>/refine/script_system.md` replaces `prompts/refine/script_system.md`),
and every prompt it lacks falls back to the shipped one. The override is scoped, not
global: `open_run` applies the config's folder for the run's duration (`prompts_from`),
and the previous setting returns when the run ends, so nothing leaks into the next run
or test. It lives in a context variable, so concurrent runs in one process (and the
threads `asyncio.to_thread` starts for them) each see their own folder.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any, ContextManager, Iterator

from .errors import FactoryError
from .paths import prompts_dir

_OVERRIDE: ContextVar[Path | None] = ContextVar("factory_prompts_dir", default=None)


def active_prompts_dir() -> Path | None:
    """The override folder in effect here (None: the shipped prompts only)."""
    return _OVERRIDE.get()


@contextmanager
def prompts_override(folder: str | Path | None) -> Iterator[None]:
    """Load prompts from `folder` first (None: the shipped ones only) inside the block."""
    resolved = Path(folder).expanduser().resolve() if folder is not None else None
    if resolved is not None and not resolved.is_dir():
        raise FactoryError(f"prompts_dir {folder} is not a folder")
    token = _OVERRIDE.set(resolved)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


def prompts_from(config: Any) -> ContextManager[None]:
    """The override a config asks for; a config without the field (eval's, an import) leaves the current one."""
    if config is None or not hasattr(config, "prompts_dir"):
        return nullcontext()
    return prompts_override(config.prompts_dir)


def prompt_file(relative: str) -> Path:
    """The file a prompt-folder name resolves to here: the override's copy when it has one, else the shipped one.
    Also for the non-template files beside the prompts (few-shot .json examples, topic lists)."""
    return _resolve(relative, _OVERRIDE.get())


def load_prompt(name: str) -> str:
    """Load prompts/<name>.md (e.g. "smoke/system"), or the override folder's <name>.md."""
    return _load(name, _OVERRIDE.get())


@lru_cache(maxsize=None)
def _load(name: str, override: Path | None) -> str:
    # Keyed by the override folder too: a run with another prompts_dir never gets this one's text.
    path = _resolve(f"{name}.md", override)
    if not path.is_file():
        raise FactoryError(f"prompt '{name}' not found: expected {path}")
    return path.read_text(encoding="utf-8").strip()


def _resolve(relative: str, override: Path | None) -> Path:
    if override is not None and (override / relative).is_file():
        return override / relative
    return prompts_dir() / relative


def render_prompt(name: str, **values: object) -> str:
    """Fill a template's {placeholders}; a missing value is an error, not a blank."""
    template = load_prompt(name)
    try:
        return template.format(**values)
    except KeyError as exc:
        raise FactoryError(f"prompt '{name}' needs a value for {exc}") from None


def prompt_hash(name: str) -> str:
    """A short hash of the template text in use (the override's when it has one), recorded as provenance."""
    return hashlib.sha256(load_prompt(name).encode()).hexdigest()[:12]


def prompts_dir_digest(folder: str | Path | None) -> str | None:
    """A hash of an override folder's files (names and text), so a fingerprint changes when a prompt is edited."""
    if folder is None:
        return None
    digest = hashlib.sha256()
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
