"""Rows from JSON lines, JSON, CSV, parquet or a `datasets` dataset.

Shared by every loader of user data (personas, tasks): each row comes with
where it came from ("file.jsonl:3"), so bad input stops with one line naming
the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterator

from .errors import FactoryError

SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")

Row = tuple[str, dict[str, Any]]  # (where it came from, for messages, e.g. "p.jsonl:3"; the row)


def open_path(path: Path, split: str) -> tuple[list[str], Iterator[Row]]:
    if path.is_dir():
        return dataset_rows(load_from_disk(path), split, str(path))
    if not path.exists():
        hint = "; for a Hub dataset, load it with datasets.load_dataset and pass the dataset"
        raise FactoryError(f"{path}: no such file or dataset folder{hint if '/' in str(path) else ''}")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return json_rows(path)
    if suffix == ".csv":
        return csv_rows(path)
    if suffix == ".parquet":
        return parquet_rows(path)
    kinds = ", ".join(SUFFIXES)
    raise FactoryError(f"{path}: unsupported persona file type '{suffix}' (use {kinds} or a dataset folder)")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise FactoryError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise FactoryError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None


def json_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    text = read_text(path)
    if path.suffix.lower() == ".json" and text.lstrip().startswith("["):
        rows = json_array(path, text)
    else:
        rows = list(json_lines(path, text))
    if not rows:
        raise FactoryError(f"{path}: no rows (the file is empty)")
    return list(rows[0][1]), iter(rows)


def json_array(path: Path, text: str) -> list[Row]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FactoryError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise FactoryError(f"{path}: item {number} is not a JSON object")
    return [(f"{path} item {n}", item) for n, item in enumerate(items, 1)]


def json_lines(path: Path, text: str) -> Iterator[Row]:
    # split("\n"), not splitlines(): JSON strings may hold U+2028, which splitlines breaks on.
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FactoryError(f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(item, dict):
            raise FactoryError(f"{path}:{number}: expected a JSON object, got {type(item).__name__}")
        yield f"{path}:{number}", item


def csv_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    # newline="" keeps line ends, so quoted fields that span lines stay whole.
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    try:
        columns = list(reader.fieldnames or [])
        rows = [(f"{path}:{reader.line_num}", row) for row in reader]
    except csv.Error as exc:
        raise FactoryError(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
    return columns, iter(rows)


def parquet_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise FactoryError(f"{path}: cannot read as parquet ({str(exc).splitlines()[0]})") from None
    rows = (row for batch in table.to_batches() for row in batch.to_pylist())  # one batch in memory as dicts
    return table.column_names, ((f"{path} row {n}", row) for n, row in enumerate(rows, 1))


def load_from_disk(path: Path) -> Any:
    import datasets

    try:
        return datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FactoryError(f"{path}: not a dataset folder written by save_to_disk ({first})") from None


def dataset_rows(dataset: Any, split: str, where: str) -> tuple[list[str], Iterator[Row]]:
    """Rows of a datasets.Dataset / DatasetDict (or anything with column_names that iterates rows)."""
    if hasattr(dataset, "keys") and not hasattr(dataset, "column_names"):
        raise FactoryError(f"{where}: not a dataset (got {type(dataset).__name__})")
    if isinstance(getattr(dataset, "column_names", None), dict):  # a DatasetDict: pick the split
        if split not in dataset:
            raise FactoryError(f"{where}: no split '{split}'; the splits are: {', '.join(dataset)}")
        dataset = dataset[split]
    columns = getattr(dataset, "column_names", None)
    if columns is None:
        raise FactoryError(f"{where}: not a dataset (got {type(dataset).__name__})")
    return list(columns), ((f"{where} row {n}", row) for n, row in enumerate(dataset, 1))


def dataset_label(dataset: Any) -> str:
    info = getattr(dataset, "info", None)
    return getattr(info, "dataset_name", None) or "dataset"
