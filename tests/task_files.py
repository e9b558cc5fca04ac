"""Where the tests' real task files are: `../shared/data/tasks` when present (every row), else the small
fixtures this repository ships (tests/data/tasks, README there), so a bare clone runs them too."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "tasks"
FIXTURES = Path(__file__).parent / "data" / "tasks"


def task_file(name: str) -> Path:
    """The shared file when there is one, else the shipped fixture of the same name."""
    shared = SHARED / name
    return shared if shared.exists() else FIXTURES / name


def tasks_folder() -> Path:
    return SHARED if SHARED.is_dir() else FIXTURES


def whole_file(name: str) -> Path:
    """A test of a whole file's figures (row counts, kinds over every row) needs the shared copy."""
    shared = SHARED / name
    if not shared.exists():
        pytest.skip(f"whole-file figures need {shared} (a bare clone has the {FIXTURES / name} subset only)")
    return shared
