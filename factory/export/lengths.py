"""How long the longest written samples are, so a trainer's length limit can be set above them.

LLaMA-Factory (and AFM's fork) cut a sample longer than `cutoff_len`: under
`mask_history` it keeps the last turns and drops the task text, and the fork
drops a row whose cut falls inside an observation. The export measures the
longest samples of the files it wrote: in characters always (DuckDB over the
shards), and in tokens when a tokenizer is named, by rendering the longest
ones by characters (token counts follow character counts closely enough that
the top few hold the longest in tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from .writers import sql_path

TOP = 32  # samples rendered to find the longest in tokens
ROUND = 256  # cutoff_len is rounded up to a multiple of this
# Characters of one sample, per format, over the written rows.
CHARS = {
    "llamafactory": "list_sum(list_transform(conversations, lambda c: length(c.value)))",
    "afm": "length(instruction) + length(input) + length(output)",
}


def longest_rows(paths: list[Path], name: str, file_type: str, top: int = TOP) -> list[dict[str, Any]]:
    """The `top` longest rows by characters, longest first, each with its `chars`."""
    reader = "read_parquet" if file_type == "parquet" else "read_json_auto"
    files = "[" + ", ".join(sql_path(path) for path in paths) + "]"
    with duckdb.connect() as con:
        relation = con.sql(f"SELECT *, {CHARS[name]} AS chars FROM {reader}({files}) ORDER BY chars DESC LIMIT {top}")
        columns = relation.columns
        return [dict(zip(columns, row)) for row in relation.fetchall()]


def measure(paths: list[Path], name: str, file_type: str, tokenizer=None) -> dict[str, int]:
    """`longest_chars`, and with a tokenizer `longest_tokens` and `cutoff_len` (rounded up) for the config."""
    rows = longest_rows(paths, name, file_type)
    if not rows:
        return {}
    measured = {"longest_chars": int(rows[0]["chars"])}
    if tokenizer is not None:
        from ..mask.render import render

        # LLaMA-Factory's templates put the newline after <|im_end|> in the response: count it too.
        tokens = max(len(render(row, tokenizer, train_turn_suffix=True)) for row in rows)
        measured.update(longest_tokens=tokens, cutoff_len=-(-tokens // ROUND) * ROUND)
    return measured
