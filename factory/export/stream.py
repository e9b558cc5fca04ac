"""Rows built in Python (rendered, converted) streamed into shards: Parquet row groups or JSON lines.

The SQL formats are written by DuckDB's COPY (writers.py); formats whose rows need Python per row (the
pre-tokenized `trl` rows, the native tool-calling rows) come through here, a chunk at a time, so memory
stays flat. A shard rotates past `max_file_mb`; shards get the Hub's names (`numbered_shards`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from .options import ExportOptions
from .writers import PARQUET_ROW_GROUP, numbered_shards


def write_stream(
    rows: Iterator[dict[str, Any]], split: str, folder: Path, options: ExportOptions, schema: pa.Schema
) -> tuple[int, list[Path]]:
    """Stream rows into folder/<split>-NNNNN-of-NNNNN.<ext>, a new file past max_file_mb: (rows, files)."""
    limit = options.max_file_mb * 1024 * 1024
    parts: list[Path] = []
    written, sink = 0, None
    for chunk in _chunks(rows, PARQUET_ROW_GROUP):
        if sink is None or sink.size() > limit:
            if sink:
                sink.close()
            parts.append(folder / f".{split}.part-{len(parts)}")
            sink = _Sink(parts[-1], options.file_type, schema)
        sink.write(chunk)
        written += len(chunk)
    if sink:
        sink.close()
    return written, numbered_shards(parts, folder, split, options.file_type)


def _chunks(rows: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Sink:
    """One shard being written: Parquet row groups or JSON lines."""

    def __init__(self, path: Path, file_type: str, schema: pa.Schema):
        self.path, self.schema = path, schema
        self.parquet = file_type == "parquet"
        self.handle = pq.ParquetWriter(path, schema, compression="zstd") if self.parquet else path.open("wb")

    def write(self, chunk: list[dict[str, Any]]) -> None:
        if self.parquet:
            self.handle.write_table(pa.Table.from_pylist(chunk, schema=self.schema))
        else:
            self.handle.write(b"".join(orjson.dumps(row) + b"\n" for row in chunk))

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def close(self) -> None:
        self.handle.close()
