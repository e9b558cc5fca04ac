"""Which trajectory `factory show` prints: the one named, a random one, or the next after the last shown.

The last id shown is remembered in RUN_DIR/.factory_show_cursor (one line), so `factory show RUN --next`
walks the run in trajectory-id order, one row per call, as a pager would.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..errors import FactoryError
from ..store import Store

CURSOR = ".factory_show_cursor"


def pick_id(run_dir: str | Path, given: str | None, at_random: bool, following: bool, seed: int | None) -> str:
    """The id to show: `given`, a random one (`seed` None: a new pick each call), or the next after the last shown."""
    if sum([given is not None, at_random, following]) != 1:
        raise FactoryError("factory show needs one of: an ID, --random or --next")
    if given is not None:
        return given
    ids = _all_ids(run_dir)
    if not ids:
        raise FactoryError(f"{run_dir}: the run store holds no trajectories; run factory refine or factory coa first")
    if at_random:
        return random.Random(seed).choice(ids)
    last = last_shown(run_dir)
    return next((i for i in ids if last is None or i > last), ids[0])  # past the last one: start over


def _all_ids(run_dir: str | Path) -> list[str]:
    with Store.open(run_dir, read_only=True) as store:
        return [row[0] for row in store.query("SELECT trajectory_id FROM trajectories ORDER BY trajectory_id")]


def last_shown(run_dir: str | Path) -> str | None:
    try:
        return (Path(run_dir) / CURSOR).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def remember(run_dir: str | Path, trajectory_id: str) -> None:
    try:
        (Path(run_dir) / CURSOR).write_text(trajectory_id + "\n", encoding="utf-8")
    except OSError:  # a read-only run folder: showing matters, remembering is a convenience
        pass
