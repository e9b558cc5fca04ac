"""The `trl` export: pre-tokenized rows whose TRL labels are train.render's labels.

TRL's SFTTrainer ignores a `messages` row's per-message `weight`: by default
it trains every token, and `assistant_only_loss` trains every assistant turn,
mistakes included. A dataset that already has `input_ids` skips TRL's own
tokenization, and its `assistant_masks` column always becomes the labels
(-100 where the mask is 0; `completion_only_loss`, packing and padding-free
keep them in place; TRL refuses `assistant_only_loss` on such rows, so leave
it unset) — so each row here is train.render's output for
the `messages` form of the trajectory, with a named tokenizer:
`input_ids` and `assistant_masks` (1 where render's label trains).

Rendering needs the tokenizer and train/ (the `[train]` extra). Rows render
one by one in Python, streamed from DuckDB in Arrow batches and written in
Parquet row groups, so memory stays flat. Truncation is render's (whole
turns to `max_length`); a row with nothing left to train is left out and
counted by render's reason.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from ..store import Store
from .formats import messages_sql
from .options import ExportError, ExportOptions
from .writers import PARQUET_ROW_GROUP, numbered_shards

SCHEMA_FIELDS = [("input_ids", pa.list_(pa.int32())), ("assistant_masks", pa.list_(pa.int8()))]
METADATA_TYPES = {"source": pa.string(), "task_id": pa.string(), "script_id": pa.string(), "weight": pa.float64()}
SCHEMA = pa.schema([("id", pa.string()), *SCHEMA_FIELDS, *METADATA_TYPES.items()])


def load_export_tokenizer(name: str | None):
    """The tokenizer the rows are rendered with; one-line errors when it or train/ is missing."""
    if not name:
        raise ExportError("the trl format is pre-tokenized: name the tokenizer (--tokenizer PATH_OR_NAME)")
    try:
        from train.modeling import tokenizer_by_name
    except ImportError as exc:
        raise ExportError(f"the trl format renders with train/: pip install 'factory[train]' ({exc})") from None
    tokenizer = tokenizer_by_name(name, "export tokenizer")
    if not getattr(tokenizer, "is_fast", False):
        raise ExportError(
            f"tokenizer '{name}': the trl format needs a fast tokenizer (render masks by character offsets)"
        )
    if not getattr(tokenizer, "chat_template", None):
        raise ExportError(f"tokenizer '{name}' has no chat template; the trl rows are rendered with it")
    return tokenizer


def rendered_rows(
    store: Store, selection: str, split: str, tokenizer, options: ExportOptions, skipped: Counter
) -> Iterator[dict[str, Any]]:
    """train.render over the split's messages rows; rows that train nothing are counted in `skipped`."""
    from train.render import IGNORE, render
    from train.render_rows import RenderError

    query = f"SELECT * EXCLUDE (split) FROM ({messages_sql(selection)}) WHERE split = '{split}'"
    for batch in store.arrow_batches(query):
        for row in batch.to_pylist():
            try:
                rendered = render(row, tokenizer, options.max_length)
            except RenderError as exc:
                skipped[str(exc).split(": ", 1)[-1]] += 1
                continue
            if rendered.reason:
                skipped[rendered.reason] += 1
                continue
            masks = [int(label != IGNORE) for label in rendered.labels]
            yield {"id": row["id"], "input_ids": rendered.input_ids, "assistant_masks": masks,
                   **{key: row[key] for key in METADATA_TYPES}}  # fmt: skip


def write_trl_split(
    rows: Iterator[dict[str, Any]], split: str, folder: Path, options: ExportOptions
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
            sink = _Sink(parts[-1], options.file_type)
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

    def __init__(self, path: Path, file_type: str):
        self.path = path
        self.parquet = file_type == "parquet"
        self.handle = pq.ParquetWriter(path, SCHEMA, compression="zstd") if self.parquet else path.open("wb")

    def write(self, chunk: list[dict[str, Any]]) -> None:
        if self.parquet:
            self.handle.write_table(pa.Table.from_pylist(chunk, schema=SCHEMA))
        else:
            self.handle.write(b"".join(orjson.dumps(row) + b"\n" for row in chunk))

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def close(self) -> None:
        self.handle.close()
