"""Read personas from JSON lines, CSV, parquet or a `datasets` dataset.

Each row gives one persona from a text field ("persona" by default, as in
Persona Hub; "input persona" as in its task subsets is tried next) and an
optional "id" column. Rows without an id get a stable hash of their text,
blank rows are skipped, and bad input stops with one line naming the file,
the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import FactoryError
from .model import Persona, text_id

DEFAULT_FIELDS = ("persona", "input persona")  # tried in order when no field is given
ID_FIELD = "id"
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")

Row = tuple[str, dict[str, Any]]  # (where it came from, for messages, e.g. "p.jsonl:3"; the row)


def load_personas(
    source: str | Path | Any, field: str | None = None, split: str = "train", source_name: str | None = None
) -> list[Persona]:
    """Personas from a file, a dataset folder (save_to_disk) or a `datasets` object.

    field: the column holding the text; None tries "persona", then "input persona".
    split: which split of a DatasetDict to read.
    source_name: recorded as each persona's source (default: the file or folder name).
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        columns, rows = _open_path(path, split)
        label = source_name or path.name
    else:
        columns, rows = _dataset_rows(source, split, "dataset")
        label = source_name or _dataset_label(source)
        path = label
    return _to_personas(rows, columns, field, str(path), label)


def _open_path(path: Path, split: str) -> tuple[list[str], Iterator[Row]]:
    if path.is_dir():
        return _dataset_rows(_load_from_disk(path), split, str(path))
    if not path.exists():
        hint = "; for a Hub dataset, load it with datasets.load_dataset and pass the dataset"
        raise FactoryError(f"{path}: no such file or dataset folder{hint if '/' in str(path) else ''}")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return _json_rows(path)
    if suffix == ".csv":
        return _csv_rows(path)
    if suffix == ".parquet":
        return _parquet_rows(path)
    kinds = ", ".join(SUFFIXES)
    raise FactoryError(f"{path}: unsupported persona file type '{suffix}' (use {kinds} or a dataset folder)")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise FactoryError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise FactoryError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None


def _json_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    text = _read_text(path)
    if path.suffix.lower() == ".json" and text.lstrip().startswith("["):
        rows = _json_array(path, text)
    else:
        rows = list(_json_lines(path, text))
    if not rows:
        raise FactoryError(f"{path}: no rows (the file is empty)")
    return list(rows[0][1]), iter(rows)


def _json_array(path: Path, text: str) -> list[Row]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FactoryError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise FactoryError(f"{path}: item {number} is not a JSON object")
    return [(f"{path} item {n}", item) for n, item in enumerate(items, 1)]


def _json_lines(path: Path, text: str) -> Iterator[Row]:
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


def _csv_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    # newline="" keeps line ends, so quoted fields that span lines stay whole.
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    try:
        columns = list(reader.fieldnames or [])
        rows = [(f"{path}:{reader.line_num}", row) for row in reader]
    except csv.Error as exc:
        raise FactoryError(f"{path}:{reader.line_num}: not valid CSV ({exc})") from None
    return columns, iter(rows)


def _parquet_rows(path: Path) -> tuple[list[str], Iterator[Row]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise FactoryError(f"{path}: cannot read as parquet ({str(exc).splitlines()[0]})") from None
    rows = (row for batch in table.to_batches() for row in batch.to_pylist())  # one batch in memory as dicts
    return table.column_names, ((f"{path} row {n}", row) for n, row in enumerate(rows, 1))


def _load_from_disk(path: Path) -> Any:
    import datasets

    try:
        return datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise FactoryError(f"{path}: not a dataset folder written by save_to_disk ({first})") from None


def _dataset_rows(dataset: Any, split: str, where: str) -> tuple[list[str], Iterator[Row]]:
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


def _dataset_label(dataset: Any) -> str:
    info = getattr(dataset, "info", None)
    return getattr(info, "dataset_name", None) or "dataset"


def _pick_field(columns: list[str], field: str | None, where: str) -> str:
    wanted = [field] if field else list(DEFAULT_FIELDS)
    for name in wanted:
        if name in columns:
            return name
    shown = ", ".join(repr(c) for c in columns) or "none"
    names = " or ".join(repr(n) for n in wanted)
    raise FactoryError(f"{where}: no {names} field; the columns are: {shown} (choose one with field=...)")


def _to_personas(rows: Iterable[Row], columns: list[str], field: str | None, where: str, label: str) -> list[Persona]:
    name = _pick_field(columns, field, where)
    personas = []
    for place, row in rows:
        if name not in row:
            keys = ", ".join(repr(k) for k in row) or "none"
            raise FactoryError(f"{place}: no '{name}' field in this row (its keys: {keys})")
        text = row[name]
        if text is None or (isinstance(text, str) and not text.strip()):
            continue  # blank rows are common at the end of exported files
        if not isinstance(text, str):
            raise FactoryError(f"{place}: field '{name}' should be text, got {type(text).__name__}")
        raw_id = row.get(ID_FIELD)
        persona_id = str(raw_id).strip() if raw_id not in (None, "") else text_id(text)
        personas.append(Persona(id=persona_id or text_id(text), text=text.strip(), source=label))
    return personas
