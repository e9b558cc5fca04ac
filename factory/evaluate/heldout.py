"""Which scripts a model may have trained on, and so may not be evaluated on.

Two kinds of evidence, used together: exported training data (`--exclude-train
DATA`: a JSONL/JSON/parquet file, a folder of them such as a published dataset,
or a `save_to_disk` folder; every row carries `script_id`), and the run store's
`curation` view (a split filter gave one of the script's kept trajectories a
training split). A split is a training split unless it is named like a held-out
one (validation, test, ...): `sft` and `rl` both train a model.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from factory.errors import FactoryError
from factory.rows import load_from_disk
from factory.store import Store

HELD_OUT_SPLITS = frozenset({"validation", "valid", "val", "test", "eval", "evaluation", "heldout", "held_out", "dev"})
DATA_SUFFIXES = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}
SAVED_DATASET_MARKERS = ("dataset_dict.json", "state.json")  # what save_to_disk writes at the top
# Files an export folder holds beside its rows: LLaMA-Factory's dataset registry (factory export writes one).
METADATA_FILES = frozenset({"dataset_info.json"})


def is_training_split(split: str | None) -> bool:
    return split is not None and split.strip().lower() not in HELD_OUT_SPLITS


def curation_training_scripts(store: Store) -> dict[str, str]:
    """script_id -> why it counts as trained on, from the store's split verdicts."""
    rows = store.query(
        "SELECT t.script_id, c.split, min(t.trajectory_id) FROM trajectories t JOIN curation c USING (trajectory_id)"
        " WHERE t.script_id IS NOT NULL AND c.split IS NOT NULL AND coalesce(c.keep, true)"
        " GROUP BY 1, 2 ORDER BY 1, 2"
    )
    found: dict[str, str] = {}
    for script_id, split, trajectory_id in rows:
        if is_training_split(split):
            found.setdefault(script_id, f"trajectory {trajectory_id} is in training split '{split}' of the store")
    return found


def data_training_scripts(path: str | Path) -> dict[str, str]:
    """script_id -> why, from an exported dataset; files of held-out splits are skipped."""
    path = Path(path)
    if not path.exists():
        raise FactoryError(f"--exclude-train {path}: no such file or folder")
    if path.is_dir() and any((path / name).exists() for name in SAVED_DATASET_MARKERS):
        return {sid: f"in training data {path}" for sid in _saved_dataset_ids(path)}
    files = _data_files(path)
    if not files:
        raise FactoryError(f"--exclude-train {path}: no .jsonl, .json or .parquet files of a training split")
    found: dict[str, str] = {}
    for file in files:
        for script_id in _file_script_ids(file):
            found.setdefault(script_id, f"in training data {file}")
    return found


def _data_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DATA_SUFFIXES and p.name not in METADATA_FILES
    )
    return [f for f in files if not _held_out_file(f.relative_to(path))]


def _held_out_file(relative: Path) -> bool:
    """data/sharegpt/validation-00000.parquet or test/part.jsonl: another split's file."""
    stem_split = relative.stem.replace("_", "-").split("-")[0]
    return any(part.lower() in HELD_OUT_SPLITS for part in [*relative.parts[:-1], stem_split])


def _file_script_ids(file: Path) -> set[str]:
    reader = DATA_SUFFIXES[file.suffix.lower()]
    source = f"read_{reader}_auto(?)" if reader == "json" else "read_parquet(?)"
    con = duckdb.connect()
    try:
        columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}", [str(file)]).fetchall()}
        if "script_id" not in columns:
            raise FactoryError(
                f"{file}: rows carry no script_id column; export with metadata to use it as --exclude-train"
            )
        # The exporter's rows carry their split too: a file that mixes splits excludes only its training rows.
        held_out = ", ".join(f"'{name}'" for name in sorted(HELD_OUT_SPLITS))
        where = (
            f" WHERE split IS NULL OR lower(CAST(split AS VARCHAR)) NOT IN ({held_out})" if "split" in columns else ""
        )
        rows = con.execute(f"SELECT DISTINCT CAST(script_id AS VARCHAR) FROM {source}{where}", [str(file)]).fetchall()
    except duckdb.Error as exc:
        raise FactoryError(f"{file}: cannot read as {reader} ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()
    return {sid for (sid,) in rows if sid}


def _saved_dataset_ids(path: Path) -> set[str]:
    dataset = load_from_disk(path)
    parts = dataset.items() if isinstance(getattr(dataset, "column_names", None), dict) else [("train", dataset)]
    found: set[str] = set()
    for split, part in parts:
        if not is_training_split(split):
            continue
        if "script_id" not in part.column_names:
            raise FactoryError(f"{path}: split '{split}' carries no script_id column; export with metadata")
        found.update(sid for sid in part.unique("script_id") if sid)
    return found
