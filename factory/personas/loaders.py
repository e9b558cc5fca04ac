"""Read personas from JSON lines, CSV, parquet or a `datasets` dataset.

Each row gives one persona from a text field ("persona" by default, as in
Persona Hub; "input persona" as in its task subsets is tried next) and an
optional "id" column. Rows without an id get a stable hash of their text,
blank rows are skipped, and bad input stops with one line naming the file,
the line and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ..errors import FactoryError
from ..rows import Row, dataset_label, dataset_rows, open_path
from .model import Persona, text_id

DEFAULT_FIELDS = ("persona", "input persona")  # tried in order when no field is given
ID_FIELD = "id"


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
        columns, rows = open_path(path, split)
        label = source_name or path.name
    else:
        columns, rows = dataset_rows(source, split, "dataset")
        label = source_name or dataset_label(source)
        path = label
    return _to_personas(rows, columns, field, str(path), label)


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
