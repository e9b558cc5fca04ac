"""The `trl` export: pre-tokenized rows whose TRL labels are factory.mask.render's labels.

TRL's SFTTrainer ignores a `messages` row's per-message `weight`: by default
it trains every token, and `assistant_only_loss` trains every assistant turn,
mistakes included. A dataset that already has `input_ids` skips TRL's own
tokenization, and its `assistant_masks` column always becomes the labels
(-100 where the mask is 0; `completion_only_loss`, packing and padding-free
keep them in place; TRL refuses `assistant_only_loss` on such rows, so leave
it unset) — so each row here is factory.mask.render's output for
the `messages` form of the trajectory, with a named tokenizer:
`input_ids` and `assistant_masks` (1 where render's label trains). With
`--observations train` the rows are rendered with `train_on_observations`
(AutoCoA's stage 3): the observations are in `assistant_masks` too, as TRL
applies them whatever the role (observations.py).

Rendering needs the tokenizer and transformers (the `[train]` extra), not torch. Rows render
one by one in Python, streamed from DuckDB in Arrow batches and written in
Parquet row groups, so memory stays flat. Truncation is render's (whole
turns to `max_length`); a row with nothing left to train is left out and
counted by render's reason.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa

from ..store import Store
from .formats import messages_sql
from .openai_format import native_rows
from .options import ExportError, ExportOptions
from .stream import write_stream

SCHEMA_FIELDS = [("input_ids", pa.list_(pa.int32())), ("assistant_masks", pa.list_(pa.int8()))]
METADATA_TYPES = {"source": pa.string(), "task_id": pa.string(), "script_id": pa.string(), "weight": pa.float64()}
SCHEMA = pa.schema([("id", pa.string()), *SCHEMA_FIELDS, *METADATA_TYPES.items()])


def load_export_tokenizer(name: str | None):
    """The tokenizer the rows are rendered with; one-line errors when it or train/ is missing."""
    if not name:
        raise ExportError("the trl format is pre-tokenized: name the tokenizer (--tokenizer PATH_OR_NAME)")
    from ..mask.tokenizer import tokenizer_by_name

    try:
        tokenizer = tokenizer_by_name(name, "export tokenizer")
    except ImportError as exc:  # transformers (or tokenizers) missing: the mask needs the tokenizer's library
        raise ExportError(f"the trl format renders with transformers: pip install 'factory[train]' ({exc})") from None
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
    """factory.mask.render over the split's messages rows; rows that train nothing are counted in `skipped`."""
    from ..mask.render import IGNORE, render
    from ..mask.rows import RenderError

    for row in _source_rows(store, selection, split, options, skipped):
        try:
            rendered = render(row, tokenizer, options.max_length, options.observations == "train")
        except RenderError as exc:
            skipped[str(exc).split(": ", 1)[-1]] += 1
            continue
        if rendered.reason:
            skipped[rendered.reason] += 1
            continue
        masks = [int(label != IGNORE) for label in rendered.labels]
        yield {"id": row["id"], "input_ids": rendered.input_ids, "assistant_masks": masks,
               **{key: row[key] for key in METADATA_TYPES}}  # fmt: skip


def _source_rows(store: Store, selection: str, split: str, options: ExportOptions, skipped: Counter):
    """The split's rows as render reads them: `messages` rows, or native ones with `tools` (openai_format)."""
    if options.tool_calls == "native":
        yield from native_rows(store, selection, split, True, skipped, options.observations)
        return
    query = f"SELECT * EXCLUDE (split) FROM ({messages_sql(selection, options.observations)}) WHERE split = '{split}'"
    for batch in store.arrow_batches(query):
        yield from batch.to_pylist()


def write_trl_split(
    rows: Iterator[dict[str, Any]], split: str, folder: Path, options: ExportOptions
) -> tuple[int, list[Path]]:
    """Stream rows into folder/<split>-NNNNN-of-NNNNN.<ext>, a new file past max_file_mb: (rows, files)."""
    return write_stream(rows, split, folder, options, SCHEMA)
