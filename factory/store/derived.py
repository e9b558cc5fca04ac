"""Columns derived from a trajectory's own text, computed once, when the row is written.

`tool_inputs` holds the input of every tool call: the bodies of the <web_search>, <crawl_page>
and <code> blocks of an AFM completion (coa and import rows), or the text after "Action:" in
each assistant turn of a refine trajectory. The redundancy filter reads the list instead of
parsing the text (up to ~10 KB a row) on every run: at 1M rows that parse was half of the
filter's time, and at write time it costs nothing next to the LLM calls that made the row.
A row with no text to parse holds an empty list; NULL means the row was written before the
column existed (migration 0009), and the filter parses its text with the same expressions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .db import Store

# Splitting on the tags is twice as fast as one lazy regular expression over the whole completion; the
# order of the inputs does not matter to the filters. Refine turns are parsed with one typed from_json
# (4x faster than walking the JSON path by path); the action is the rest of the assistant turn after
# "Action: ". try(): an invalid turns text gives NULL (no inputs), and is parsed once instead of twice.
AFM_INPUTS = """flatten(
    [[split_part(part, '</' || tag || '>', 1) FOR part IN string_split(t.completion, '<' || tag || '>')[2:]]
     FOR tag IN {tags}])"""
ACTIONS = """try([trim(split_part(x.content, 'Action:', 2))
    FOR x IN from_json(t.turns, '[{"role": "VARCHAR", "content": "VARCHAR"}]') IF x.role = 'assistant'])"""


@lru_cache(maxsize=8)
def tool_inputs_sql(tool_tags: tuple[str, ...]) -> str:
    """Which text holds a row's tool calls: coa and import rows keep them in the AFM completion (the bodies of
    the `tool_tags` blocks: the tools the coa path declares, factory/coa/tools/registry.py, passed in by the
    writer), refine rows in their turns; a row of any other source in whichever it has."""
    afm = AFM_INPUTS.format(tags=list(tool_tags))
    return f"""CASE WHEN t.source IN ('coa', 'import') THEN {afm} WHEN t.source = 'refine' THEN {ACTIONS}
    WHEN t.completion IS NOT NULL THEN {afm} ELSE {ACTIONS} END"""


def upsert_trajectory(store: Store, values: dict[str, Any], tool_tags: tuple[str, ...] = ()) -> None:
    """Insert or replace one trajectory row, its derived columns computed by DuckDB from the row's values
    (`tool_tags`: the AFM tags whose bodies are tool inputs; none for a row without an AFM completion)."""
    row = {"source": None, "completion": None, "turns": None, **values}  # the columns tool_inputs_sql reads
    names, marks = ", ".join(row), ", ".join("?" * len(row))
    [(tool_inputs,)] = store.query(
        f"SELECT coalesce({tool_inputs_sql(tool_tags)}, []) FROM (VALUES ({marks})) t({names})", list(row.values())
    )
    store.upsert("trajectories", {**row, "tool_inputs": tool_inputs})
