"""Held-out environments: verified refine scripts the model never trained on.

Scripts come from a run store (`scripts` rows with verified = true) or a file of
scripts (JSONL/JSON/parquet rows: a script object, or {script_id, script}; the RL
export writes one beside its refine-world rows), read by factory/envs/scripts.py.
Every script left out is recorded with its reason: in training data (see
`heldout.py`), no declared goal (success could not be judged), or a goal the
search cannot reach or that already holds (no progress to measure).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from factory.envs.scripts import file_scripts, playable, store_scripts
from factory.errors import FactoryError
from factory.refine.script import Script
from factory.store import STORE_FILENAME, Store

from .heldout import curation_training_scripts, data_training_scripts


class NoEnvironmentsError(FactoryError):
    """Every candidate script was excluded, or there were none."""


@dataclass
class Environment:
    env_id: str  # the script_id
    script: Script
    plan_length: int  # the shortest plan from the start: progress is measured against it


@dataclass
class Exclusion:
    env_id: str
    reason: str


@dataclass
class Selection:
    environments: list[Environment]
    excluded: list[Exclusion] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)  # what decided "held out", for the report

    def to_dict(self) -> dict[str, Any]:
        return {
            "environments": [e.env_id for e in self.environments],
            "evidence": self.evidence,
            "excluded": [{"env_id": x.env_id, "reason": x.reason} for x in self.excluded],
        }


def select_environments(
    candidates: Iterable[tuple[str, Script | str]], store: Store | None = None, exclude_train: Iterable[str | Path] = ()
) -> Selection:
    """Keep the playable scripts that no training evidence names; refuse when none is left."""
    trained: dict[str, str] = {}
    evidence = []
    if store is not None:
        from_store = curation_training_scripts(store)
        evidence.append(f"store curation splits: {len(from_store)} script(s) in a training split")
        trained.update(from_store)
    for data in exclude_train:
        from_data = data_training_scripts(data)
        evidence.append(f"training data {data}: {len(from_data)} script(s)")
        for script_id, reason in from_data.items():
            trained.setdefault(script_id, reason)
    selection = Selection([], evidence=evidence)
    for script_id, script in candidates:
        reason = script if isinstance(script, str) else trained.get(script_id)
        length = None
        if reason is None:
            length, reason = playable(script)
        if length is None:
            selection.excluded.append(Exclusion(script_id, reason))
        else:
            selection.environments.append(Environment(script_id, script, length))
    if not selection.environments:
        raise NoEnvironmentsError(_nothing_left(selection))
    return selection


def _nothing_left(selection: Selection) -> str:
    if not selection.excluded:
        return "no verified scripts to evaluate on (run factory refine first, or pass --scripts FILE)"
    first = selection.excluded[0]
    return (
        f"no held-out environments left: all {len(selection.excluded)} script(s) excluded "
        f"(e.g. {first.env_id}: {first.reason})"
    )


def load_environments(
    run_dir: str | Path | None = None,
    scripts_file: str | Path | None = None,
    exclude_train: Iterable[str | Path] = (),
    store: Store | None = None,
) -> Selection:
    """Held-out environments from a run folder's store, or from a scripts file (the store, when
    given, still contributes its curation splits)."""
    if scripts_file is None and store is None and run_dir is None:
        raise FactoryError("give a run folder or a scripts file to take environments from")
    own = store is None and run_dir is not None and (Path(run_dir) / STORE_FILENAME).exists()
    store = Store.open(run_dir) if own else store
    try:
        if scripts_file is not None:
            candidates = list(file_scripts(scripts_file))
        elif store is not None:
            candidates = list(store_scripts(store))
        else:
            raise FactoryError(f"{run_dir}: no run store (factory.sqlite); pass --scripts FILE")
        return select_environments(candidates, store, exclude_train)
    finally:
        if own:
            store.close()
