"""Read personas from JSON lines, CSV, parquet or a `datasets` dataset.

Each row gives one persona from a text field ("persona" by default, as in
Persona Hub; "input persona" as in its task subsets is tried next) and an
optional "id" column. Rows without an id get a stable hash of their text,
blank rows are skipped, and bad input stops with one line naming the file,
the line and the field.

A persona is a short description (Persona Hub's persona.jsonl holds 200,000 in
21.6 MB, about 100 characters each; the shipped library's longest is 262): a row
longer than MAX_PERSONA_CHARS (2,000) is not one
(a pasted document, a broken export) and would be sent whole in every prompt.
Such rows are skipped and counted, the first one named, so one bad row in a
200k-line file costs that row only; a file with no usable row is an error.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Iterable

from ..errors import FactoryError
from ..rows import Row, dataset_label, dataset_rows, open_path
from .model import Persona, text_id

DEFAULT_FIELDS = ("persona", "input persona")  # tried in order when no field is given
ID_FIELD = "id"
MAX_PERSONA_CHARS = 2000

log = logging.getLogger(__name__)


class PersonaList(list):
    """The personas a file gave, with the rows it skipped as too long ("file.jsonl:7 (1005204 characters)")."""

    def __init__(self, personas: Iterable[Persona] = (), too_long: Iterable[str] = ()):
        super().__init__(personas)
        self.too_long = list(too_long)


def load_personas(
    source: str | Path | Any,
    field: str | None = None,
    split: str = "train",
    source_name: str | None = None,
    max_chars: int = MAX_PERSONA_CHARS,
) -> PersonaList:
    """Personas from a file, a dataset folder (save_to_disk) or a `datasets` object.

    field: the column holding the text; None tries "persona", then "input persona".
    split: which split of a DatasetDict to read.
    source_name: recorded as each persona's source (default: the file or folder name).
    Rows longer than `max_chars` are skipped (listed in `.too_long`, one warning line);
    a source with no usable persona raises FactoryError.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        columns, rows = open_path(path, split)
        label = source_name or path.name
    else:
        columns, rows = dataset_rows(source, split, "dataset")
        label = source_name or dataset_label(source)
        path = label
    return _to_personas(rows, columns, field, str(path), label, max_chars)


def _pick_field(columns: list[str], field: str | None, where: str) -> str:
    wanted = [field] if field else list(DEFAULT_FIELDS)
    for name in wanted:
        if name in columns:
            return name
    shown = ", ".join(repr(c) for c in columns) or "none"
    names = " or ".join(repr(n) for n in wanted)
    raise FactoryError(
        f"{where}: no {names} field; the columns are: {shown} (choose one: --persona-field on "
        "the command line, refine.persona_field in the config, field= in Python)"
    )


def _to_personas(
    rows: Iterable[Row], columns: list[str], field: str | None, where: str, label: str, max_chars: int
) -> PersonaList:
    if not columns:
        raise FactoryError(f"{where}: no rows (the file is empty)")
    name = _pick_field(columns, field, where)
    personas, too_long, seen = PersonaList(), [], 0
    for place, row in rows:
        seen += 1
        text = _row_text(place, row, name)
        if text is None:
            continue  # blank rows are common at the end of exported files
        if len(text) > max_chars:
            too_long.append(f"{place} ({len(text)} characters)")
            continue
        raw_id = row.get(ID_FIELD)
        persona_id = str(raw_id).strip() if raw_id not in (None, "") else text_id(text)
        personas.append(Persona(id=persona_id or text_id(text), text=text, source=label))
    personas.too_long = too_long
    _check_usable(personas, seen, where, name, max_chars)
    return personas


# What spreadsheets and pandas write for a missing cell (pandas' own NA markers): not a persona.
MISSING_MARKERS = {"nan", "none", "null", "n/a", "na", "<na>", "#n/a"}


def _row_text(place: str, row: dict[str, Any], name: str) -> str | None:
    """The row's persona text, stripped; None for a blank or missing cell (NaN, null, "N/A", ...)."""
    if name not in row:
        keys = ", ".join(repr(k) for k in row) or "none"
        raise FactoryError(f"{place}: no '{name}' field in this row (its keys: {keys})")
    text = row[name]
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return None
    if isinstance(text, str) and text.strip().lower() in MISSING_MARKERS | {""}:
        return None
    if not isinstance(text, str):
        raise FactoryError(f"{place}: field '{name}' should be text, got {type(text).__name__}")
    return text.strip()


def _check_usable(personas: PersonaList, seen: int, where: str, name: str, max_chars: int) -> None:
    skipped = personas.too_long
    limit = f"longer than {max_chars} characters (a persona is a short description)"
    if not personas and skipped:
        rows = "the only row is" if len(skipped) == 1 else f"all {len(skipped)} rows are"
        raise FactoryError(f"{where}: no usable persona: {rows} {limit}; first: {skipped[0]}")
    if not personas:
        why = "only a header" if seen == 0 else f"every row has a blank '{name}'"
        raise FactoryError(f"{where}: no rows ({why})")
    if skipped:
        log.warning("%s: skipped %d of %d persona rows %s; first: %s", where, len(skipped), seen, limit, skipped[0])
