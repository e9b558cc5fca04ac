"""The preference exports (`--format preference | ranking | kto`): pairs from the kept trajectories and the store.

Each split's pairs are, in order, the refine step-level pairs of the split's kept refine trajectories
(pairs_refine.py, built here from their turns, steps and scripts) and the pairs a stage stored in
`preference_pairs` that follow a trajectory or task group of that split (pairs_stored.py). The export's
selection decides both (selection.py: verified, kept by every filter, the same split), so a pair never
trains while its trajectory is held out. Rows are not repeated by `--upsample`: a pair is one judgement.

The rows of each format come from preference_rows.py; a pair a format cannot hold (one side only, a side
of several messages for LLaMA-Factory) and a stored row a stage wrote wrong are counted under their
reason in `settings["skipped"]`, which the export notes; how long the written pairs are, the longest and
the words of each side, is noted too (preference_lengths.py). `ranking` also writes LLaMA-Factory's
dataset_info.json (preference_consumers.py). What is not built, and why: trajectory-level pairs, since
the store keeps no failed attempt's steps beside a verified one (docs/preference.md).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa
from pydantic import ValidationError

from ..store import Store
from .options import ExportOptions, FormatName
from .pairs_record import Pair
from .pairs_refine import MISMATCHED, MismatchedSteps, RefineRow, refine_pairs
from .pairs_stored import count_unplaced, stored_pairs
from .preference_lengths import SideWords, measured
from .preference_rows import KTO_SCHEMA, PREFERENCE_SCHEMA, RANKING_SCHEMA, kto_rows, preference_rows, ranking_rows
from .stream import write_stream

SplitWriter = Callable[[str, Path], tuple[int, list[Path]]]
RowShape = Callable[[Pair, Counter], Iterator[dict[str, Any]]]
UNREADABLE = "refine row: turns, steps or script unreadable"


def preference_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict
) -> SplitWriter:
    return pair_writer(store, selection, options, settings, preference_rows, PREFERENCE_SCHEMA)


def kto_writer(store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict) -> SplitWriter:
    return pair_writer(store, selection, options, settings, kto_rows, KTO_SCHEMA)


def ranking_writer(
    store: Store, name: FormatName, selection: str, options: ExportOptions, settings: dict
) -> SplitWriter:
    """The ranking rows; their dataset_info.json is written once every shard has its final name
    (consumers.finish_format)."""
    return pair_writer(store, selection, options, settings, ranking_rows, RANKING_SCHEMA)


def pair_writer(
    store: Store, selection: str, options: ExportOptions, settings: dict, shape: RowShape, schema: pa.Schema
) -> SplitWriter:
    """A writer of one format's splits: each split's pairs shaped by `shape`, streamed into shards."""
    skipped: Counter = settings.setdefault("skipped", Counter())
    settings["pair_chosen"] = options.pair_chosen
    count_unplaced(store, selection, options, skipped)
    tally = SideWords()

    def write_split(split: str, folder: Path) -> tuple[int, list[Path]]:
        pairs = split_pairs(store, selection, options, split, skipped)
        rows = (row for pair in pairs for row in shape(pair, skipped))
        return write_stream(measured(rows, settings, tally), split, folder, options, schema)

    return write_split


def split_pairs(store: Store, selection: str, options: ExportOptions, split: str, skipped: Counter) -> Iterator[Pair]:
    """The split's refine step pairs, then its stored pairs."""
    for values in refine_rows(store, selection, split):
        try:  # a row's pairs are few: built whole, so a row the store holds wrong is one count, not a traceback
            pairs = list(refine_pairs(RefineRow(*values), options.pair_chosen))
        except MismatchedSteps:
            skipped[MISMATCHED] += 1
            continue
        except (ValueError, TypeError, KeyError, AttributeError, ValidationError):
            skipped[UNREADABLE] += 1
            continue
        yield from pairs
    yield from stored_pairs(store, selection, options, split, skipped)


def refine_rows(store: Store, selection: str, split: str) -> Iterator[tuple]:
    """The split's kept refine trajectories with their steps and scripts, by trajectory id."""
    query = f"""
        WITH kept AS (SELECT DISTINCT trajectory_id FROM ({selection})
                      WHERE source = 'refine' AND split = '{split}' AND turns IS NOT NULL)
        SELECT t.trajectory_id, t.script_id, t.turns, t.steps, s.script
        FROM kept JOIN trajectories t USING (trajectory_id) LEFT JOIN scripts s ON s.script_id = t.script_id
        ORDER BY t.trajectory_id"""
    for batch in store.arrow_batches(query, rows=256):
        yield from (tuple(row.values()) for row in batch.to_pylist())
