"""What other packages add to factory, found through the `factory.plugins` entry points.

factory never imports train/: the trainer builds on factory (the mask, the rows, the errors), so
factory naming it back would make the two one package to read. Instead train/ declares itself in
pyproject.toml (`[project.entry-points."factory.plugins"] trainer = "train.plugin"`) and the two
places that start it, `factory train` and the pipeline's train and eval stages, ask for it here.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol


class Trainer(Protocol):
    """The trainer as factory uses it (train/plugin.py is the one that ships)."""

    RUN_CONTROL_FIELDS: tuple[str, ...]  # settings that change where and how often it logs/saves, not the weights

    def main(self, argv: list[str]) -> int:
        """`factory train ARGS`: the trainer's own command line."""

    def train_stage(self, config_path: str, flags: list[str]) -> list[str]:
        """Train from a config file and `--section.field value` overrides; the lines to show."""

    def last_checkpoint(self, output_dir: str | Path) -> Path | None:
        """The newest finished checkpoint in an output folder."""


def trainer(what: str) -> Trainer:
    """The installed trainer, or one line saying what to install (`what` names who asked)."""
    from .errors import require_train_extra

    require_train_extra(what)
    found = [point for point in entry_points(group="factory.plugins") if point.name == "trainer"]
    if not found:
        from .errors import MissingExtraError

        raise MissingExtraError(f"{what} needs the trainer, and no 'trainer' plugin is installed: pip install -e .")
    return found[0].load()
