"""Write one format's rows to Parquet or JSON-lines shards, one set of files per split.

DuckDB's COPY streams the query into files itself (rows are built and written a
vector at a time, never gathered in Python), rotating to a new file past
`max_file_mb`. Each format is written into a staging folder and swapped in
when complete, so an interrupted export never leaves a half-written format.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb

from ..store import Store
from .options import ExportError, ExportOptions

EXTENSIONS = {"parquet": "parquet", "jsonl": "jsonl"}
# Small row groups bound the writer's memory and suit the Hub's dataset viewer.
PARQUET_ROW_GROUP = 2048
PARQUET_OPTIONS = f"FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {PARQUET_ROW_GROUP}"
JSON_OPTIONS = "FORMAT json"


def sql_path(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def write_split(
    store: Store, format_sql: str, split: str, folder: Path, options: ExportOptions
) -> tuple[int, list[Path]]:
    """COPY the split's rows into folder/<split>-NNNNN-of-NNNNN.<ext>: (rows, files); no files for no rows."""
    staging = folder / f".{split}.parts"
    file_options = PARQUET_OPTIONS if options.file_type == "parquet" else JSON_OPTIONS
    # Split names were checked against SPLIT_NAME (\w+ words), so quoting them inline is safe.
    query = f"SELECT * EXCLUDE (split) FROM ({format_sql}) WHERE split = '{split}'"
    copy = (
        f"COPY ({query}) TO {sql_path(staging)} ({file_options}, FILE_SIZE_BYTES '{options.max_file_mb}MB', "
        f"FILENAME_PATTERN 'part-{{i}}')"
    )
    try:
        (written,) = store.query(copy)[0]
    except duckdb.Error as exc:
        raise ExportError(f"writing split {split!r} failed: {str(exc).splitlines()[0]}") from None
    parts = sorted(staging.glob("part-*"), key=lambda p: int(re.search(r"part-(\d+)", p.name).group(1)))
    files = numbered_shards(parts, folder, split, options.file_type) if written else []
    shutil.rmtree(staging, ignore_errors=True)
    return written, files


def numbered_shards(parts: list[Path], folder: Path, split: str, file_type: str) -> list[Path]:
    """Rename finished part files, in order, to folder/<split>-NNNNN-of-NNNNN.<ext> (the Hub's shard names)."""
    files = []
    for index, part in enumerate(parts):
        target = folder / f"{split}-{index:05d}-of-{len(parts):05d}.{EXTENSIONS[file_type]}"
        part.rename(target)
        files.append(target)
    return files


def replace_folder(staging: Path, final: Path, keep: bool) -> None:
    """Swap a finished staging folder in for the format's previous output (or drop both when empty)."""
    if final.exists():
        shutil.rmtree(final)
    if keep:
        staging.rename(final)
    else:
        shutil.rmtree(staging)


def fresh_folder(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
