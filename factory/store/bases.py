"""Copies of the big tables saved as Parquet files beside the store, for every process to start from.

A whole copy of 100k trajectories (~1 GB of text) costs ~6 s to read out of SQLite, and each process
paid it again: `factory filter`, then `factory export`, then `factory show`. And held in DuckDB's
memory, a copy that size spills past its memory limit. So a big table's whole copy is written once
as a Parquet file (a base) in `RUN_DIR/copies/`, named by what it holds:

    <store id>-<table>-<columns hash>-<last change seq>-<highest rowid>-<rows>.parquet

and a query reads the base in place (DuckDB scans only the columns it needs), minus the rows changed
since (a `gone` table of rowids), plus those rows and the new ones fetched from SQLite (the copy's
catch-up, changes.py). A base never changes: a newer one replaces it when catching up from it would
cost more than writing it again; the older files are then deleted, and a process still reading one
takes its copies again (reader.py). The store id keeps a base from being read for another store file
that later takes the folder; the columns hash, for a table whose columns a migration changed.
Values are stored as SQLite holds them (text, integers, reals) and cast to the declared types when
read, as the in-memory copies are (copies.py).

A folder that cannot be written (read-only media, a full disk) means no base: the copy is held in
memory as before. Bases are a cache and must not take the room a run's own writes need: none is
written unless the disk keeps twice the store's size free besides (ROOM_MARGIN more).
"""

from __future__ import annotations

import hashlib
import os
import queue
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .changes import Mark, changed_since, worth_catching_up
from .copies import CHUNK_ROWS, arrow_columns, cast, column_kind

FOLDER = "copies"
BASE_MIN_ROWS = 20_000  # smaller tables are copied into memory whole, in well under a second
# Row groups and scan batches are sized in bytes (rows of 10 KB trajectories or of 60-byte verdicts):
# a reader holds a row group's columns, and DuckDB one batch ahead, whatever the rows.
GROUP_BYTES = 48 * 2**20
BATCH_BYTES = 16 * 2**20
ROOM_MARGIN = 256 * 2**20


class BoundedDataset(ds.FileSystemDataset):
    """A base as DuckDB scans it, reading one batch ahead. pyarrow's scanner reads 16 batches ahead
    by default, outside DuckDB's memory limit: an export of 300k trajectories peaked at 4.4 GiB that
    way, 1.4 GiB this way, and ran faster (measured side by side on one file)."""

    batch_rows = 2048

    def scanner(self, *args, **kwargs):  # type: ignore[override]
        kwargs.setdefault("batch_readahead", 1)
        kwargs.setdefault("fragment_readahead", 1)
        kwargs.setdefault("batch_size", self.batch_rows)
        return super().scanner(*args, **kwargs)


def open_base(path: Path) -> ds.Dataset:
    found = ds.dataset([str(path)], format="parquet")
    dataset = BoundedDataset(list(found.get_fragments()), found.schema, found.format, found.filesystem)
    meta = pq.read_metadata(path)
    row_bytes = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) / max(meta.num_rows, 1)
    dataset.batch_rows = rows_for(BATCH_BYTES, row_bytes)
    return dataset


def rows_for(budget: int, row_bytes: float) -> int:
    return int(min(max(budget / max(row_bytes, 1.0), 1024), 131_072))


class Base(NamedTuple):
    path: Path
    mark: Mark


def store_id(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT store_id FROM _store").fetchone()
    except sqlite3.OperationalError:  # a store made before the change log: no bases
        return None
    return row[0] if row else None


def columns_key(columns: list[tuple[str, str]]) -> str:
    return hashlib.sha256(repr(columns).encode()).hexdigest()[:12]


def _prefix(owner: str, table: str, columns: list[tuple[str, str]]) -> str:
    return f"{owner}-{table}-{columns_key(columns)}-"


def find_base(folder: Path, owner: str, table: str, columns: list[tuple[str, str]]) -> Base | None:
    """The newest base of `table` with these columns, if any."""
    return max(_bases(folder, _prefix(owner, table, columns)), key=lambda b: (b.mark.seq, b.mark.high), default=None)


def _bases(folder: Path, prefix: str) -> list[Base]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith(prefix) and name.endswith(".parquet"):
            try:
                mark = Mark(*(int(part) for part in name[len(prefix) : -len(".parquet")].split("-")))
            except (TypeError, ValueError):
                continue  # not one of ours
            found.append(Base(folder / name, mark))
    return found


def usable_base(db: sqlite3.Connection, store_file: Path, owner: str, table: str, columns: list[tuple[str, str]],
                now: Mark) -> Base | None:  # fmt: skip
    """The newest saved base of `table`, when catching up from it (to `now`) is cheaper than saving a new
    one; else a new one, saved now (None when the disk or the folder cannot take it)."""
    folder = store_file.parent / FOLDER
    base = find_base(folder, owner, table, columns)
    if base and base.mark.seq <= now.seq and worth_catching_up(changed_since(db, table, base.mark), base.mark, now):
        return base
    return write_base(db, folder, owner, table, columns, now) if room_for_a_base(store_file) else None


def base_view(name: str, columns: list[tuple[str, str]]) -> list[str]:
    """DuckDB statements that make `name` the view a query reads: the base (registered as `_base_<name>`)
    less the rows changed since (`_gone_<name>`), and `_copy_<name>`, the rows fetched since (changed or
    new: the catch-up fills both), the columns cast to their declared types."""
    casts = ", ".join(["_rowid", *(cast(column, kind) for column, kind in columns)])
    names = ", ".join(f'"{column}"' for column, _ in columns)
    return [
        f'CREATE OR REPLACE TABLE "_copy_{name}" AS SELECT {casts} FROM "_base_{name}" LIMIT 0',
        f'CREATE OR REPLACE TABLE "_gone_{name}" (_rowid BIGINT)',
        f'CREATE OR REPLACE VIEW "{name}" AS SELECT {names} FROM (SELECT {casts} FROM "_base_{name}" '
        f'WHERE _rowid NOT IN (SELECT _rowid FROM "_gone_{name}")) UNION ALL SELECT {names} FROM "_copy_{name}"',
    ]


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    return pa.schema([("_rowid", pa.int64()), *((name, column_kind(declared)[0]) for name, declared in columns)])


def room_for_a_base(store_file: Path) -> bool:
    """Twice the store's size free, and a margin: a base (compressed, smaller than its table) never
    takes the room the run's own writes need."""
    try:
        used = sum(path.stat().st_size for path in store_file.parent.glob(f"{store_file.name}*"))
        return shutil.disk_usage(store_file.parent).free > 2 * used + ROOM_MARGIN
    except OSError:
        return False


def write_base(db: sqlite3.Connection, folder: Path, owner: str, table: str, columns: list[tuple[str, str]],
               mark: Mark) -> Base | None:  # fmt: skip
    """Write the table's rows (as of `mark`: call it in the read transaction that took the mark) as a
    new base, then delete the older ones; None when the folder cannot take it."""
    prefix = _prefix(owner, table, columns)
    path = folder / f"{prefix}{mark.seq}-{mark.high}-{mark.rows}.parquet"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        folder.mkdir(exist_ok=True)
        _write_rows(db, table, columns, temporary)
        os.replace(temporary, path)
    except (OSError, pa.ArrowException):
        _remove(temporary)
        return None
    for older in _bases(folder, prefix):  # a newer one, saved meanwhile by another process, stays
        if (older.mark.seq, older.mark.high) < (mark.seq, mark.high):
            _remove(older.path)
    return Base(path, mark)


def _write_rows(db: sqlite3.Connection, table: str, columns: list[tuple[str, str]], path: Path) -> None:
    """Rows are read and turned into Arrow on this thread while a writer thread compresses the chunk
    before (pyarrow releases the GIL there): on two cores, about the cost of reading alone."""
    schema = arrow_schema(columns)
    kinds = list(zip(schema.names, schema.types))
    names = ", ".join(["rowid", *(f'"{name}"' for name, _ in columns)])
    cursor = db.execute(f'SELECT {names} FROM "{table}" ORDER BY rowid')
    chunks: queue.Queue = queue.Queue(maxsize=2)
    failure: list[BaseException] = []

    def write() -> None:
        chunk = True
        try:
            with pq.ParquetWriter(
                path, schema, compression="zstd", compression_level=3
            ) as writer:  # half of level 1's size, as fast
                while (chunk := chunks.get()) is not None:
                    writer.write_table(
                        chunk, row_group_size=rows_for(GROUP_BYTES, chunk.nbytes / max(chunk.num_rows, 1))
                    )
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread, which raises it
            failure.append(exc)
            while chunk is not None:  # let the reading thread finish putting
                chunk = chunks.get()

    writer = threading.Thread(target=write, name="factory-base-writer", daemon=True)
    writer.start()
    try:
        while rows := cursor.fetchmany(CHUNK_ROWS):
            chunks.put(pa.Table.from_arrays(arrow_columns(rows, kinds), schema=schema))
    finally:
        chunks.put(None)
        writer.join()
    if failure:
        raise failure[0]


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
