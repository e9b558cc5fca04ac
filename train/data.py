"""Training data: export files -> rendered examples (tokens + labels from factory.mask.render), held-out split, data hash.

Any export format is accepted (sharegpt `conversations`, OpenAI `messages`, AFM
`instruction`/`output`); factory.mask.render tells them apart and decides the masks,
so nothing here looks at which tokens train. A row that cannot be rendered
stops the run with one line naming the file and line; a row with nothing left
to train (loss off everywhere, or truncated away) is skipped and counted by reason.
"""

from __future__ import annotations

import glob
import hashlib
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from factory.errors import FactoryError
from factory.mask.render import IGNORE, render
from factory.rows import SUFFIXES, open_path
from train.config import DataSection

Row = tuple[str, dict[str, Any]]  # (where it came from, e.g. "train.jsonl:3"; the row)


@dataclass
class Example:
    row_id: str
    input_ids: torch.Tensor  # int64 [n]
    labels: torch.Tensor  # int64 [n], IGNORE where the token does not train (as factory.mask.render decided)
    weight: float = 1.0  # the export's row weight (upsampling); scales this row's tokens in the loss

    def __len__(self) -> int:
        return int(self.input_ids.numel())


@dataclass
class TrainingData:
    train: list[Example]
    validation: list[Example]
    data_hash: str  # of the files' bytes: a checkpoint refuses to resume on other data
    skipped: Counter = field(default_factory=Counter)  # reason -> rows left out
    no_validation: str | None = None  # why there is no validation loss, when there is none

    def trained_tokens(self) -> int:
        return sum(int((e.labels != IGNORE).sum()) for e in self.train)


def load_training_data(data: DataSection, tokenizer, seed: int) -> TrainingData:
    train_files, held_files = expand(data.train, "data.train"), expand(data.validation, "data.validation")
    train_rows = read_rows(train_files)
    if held_files:
        held_rows = read_rows(held_files)
    else:
        train_rows, held_rows = split_holdout(train_rows, data.validation_fraction, seed)
    skipped: Counter = Counter()
    train = render_rows(train_rows, tokenizer, data, skipped)
    validation = render_rows(held_rows, tokenizer, data, skipped)
    if not train:
        reasons = "; ".join(f"{n} x {why}" for why, n in skipped.most_common(3)) or "no rows"
        hint = ""
        if any("max_length" in why for why in skipped):  # the render's word: name the flag that sets it
            hint = f"; raise data.max_seq_length (now {data.max_seq_length}, flag --data.max_seq_length)"
        raise FactoryError(f"{', '.join(data.train)}: nothing to train on ({reasons}{hint})")
    why = None if validation else _no_validation(data, held_files, held_rows, train_rows)
    return TrainingData(train, validation, data_files_hash(data), skipped, why)


def data_files_hash(data: DataSection) -> str:
    """The data_hash a checkpoint records: the bytes of the train files, then the validation files."""
    return files_hash(expand(data.train, "data.train") + expand(data.validation, "data.validation"))


def _no_validation(data: DataSection, held_files: list, held_rows: list, train_rows: list) -> str:
    if held_files:
        return f"every row of data.validation ({len(held_rows)}) was left out by the render (see skipped_rows)"
    if data.validation_fraction <= 0:
        return "data.validation_fraction is 0 and no data.validation file is given"
    groups = {group_key(row, where) for where, row in train_rows}
    return (
        f"the training rows hold {len(groups)} task group(s): none can be held out without leaving nothing to "
        "train; export more tasks, or give data.validation"
    )


def expand(patterns: list[str], field: str) -> list[str]:
    """Paths as given; a pattern with * ? [ becomes its matches in name order (an export's shards: sft-*.parquet)."""
    paths = []
    for pattern in patterns:
        if not any(char in pattern for char in "*?["):
            paths.append(pattern)
            continue
        matches = sorted(glob.glob(pattern))
        if not matches:
            hint = " (no validation split exported? --data.validation '[]' holds out train groups instead)"
            raise FactoryError(f"{field}: '{pattern}' matches no file{hint if field == 'data.validation' else ''}")
        paths.extend(matches)
    return paths


def read_rows(paths: list[str]) -> list[Row]:
    rows: list[Row] = []
    for name in paths:
        path = Path(name)
        if path.is_file() and path.suffix.lower() not in SUFFIXES:
            raise FactoryError(f"{path}: unsupported export file type '{path.suffix}' (use .jsonl, .json or .parquet)")
        rows.extend(open_path(path, "train")[1])
    return rows


def split_holdout(rows: list[Row], fraction: float, seed: int) -> tuple[list[Row], list[Row]]:
    """Hold out about `fraction` of the rows as whole groups (at least one when fraction > 0), chosen by `seed`.

    A group is every row of one task (task_id, else script_id, else id: the
    export's own grouping), so upsampled copies of a trajectory (export
    --upsample repeat writes one id k times) and sibling trajectories of a task
    never sit on both sides, which would make the validation loss a training loss.
    """
    groups: dict[str, list[int]] = {}
    for index, (where, row) in enumerate(rows):
        groups.setdefault(group_key(row, where), []).append(index)
    if fraction <= 0 or len(groups) < 2:
        return rows, []
    keys = sorted(groups)  # name order first: the draw depends on the seed only, not on the file order
    random.Random(seed).shuffle(keys)
    target, held = fraction * len(rows), set()
    for key in keys[:-1]:  # the last group always stays: something must train
        if held and len(held) + len(groups[key]) / 2 > target:
            break
        held.update(groups[key])
    return [r for i, r in enumerate(rows) if i not in held], [r for i, r in enumerate(rows) if i in held]


def group_key(row: dict[str, Any], where: str) -> str:
    """task_id, else script_id, else id (else the row's place), tagged so that the kinds never collide."""
    for name in ("task_id", "script_id", "id"):
        value = row.get(name)
        if value is not None and value != "":
            return f"{name}:{value}"
    return f"row:{where}"


def render_rows(rows: list[Row], tokenizer, data: DataSection, skipped: Counter) -> list[Example]:
    examples = []
    for where, row in rows:
        weight = row_weight(row, where) if data.row_weights else 1.0
        if weight == 0:
            skipped["weight 0"] += 1
            continue
        try:
            rendered = render(row, tokenizer, data.max_seq_length, data.train_on_observations)
        except FactoryError as exc:
            raise FactoryError(f"{where}: {exc}") from None
        if rendered.reason is not None or not rendered.trained_tokens:
            skipped[rendered.reason or "no trained tokens"] += 1
            continue
        ids = torch.tensor(rendered.input_ids, dtype=torch.long)
        labels = torch.tensor(rendered.labels, dtype=torch.long)
        examples.append(Example(str(row.get("id", where)), ids, labels, weight))
    return examples


def row_weight(row: dict[str, Any], where: str) -> float:
    weight = row.get("weight")
    if weight is None:
        return 1.0
    number = isinstance(weight, (int, float)) and not isinstance(weight, bool)
    if not number or not math.isfinite(weight) or weight < 0:
        raise FactoryError(f"{where}: field 'weight' must be a finite number >= 0, got {weight!r}")
    return float(weight)


def files_hash(paths: list[str]) -> str:
    """sha256 over the files' bytes in the given order (a dataset folder: its files in name order)."""
    digest = hashlib.sha256()
    for name in paths:
        path = Path(name)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            digest.update(f"{file.stat().st_size}\0".encode())  # sizes keep file boundaries unambiguous
            with file.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()[:16]
