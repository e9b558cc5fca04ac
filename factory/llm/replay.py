"""Replaying the call journal when a store is opened for writing.

The journal's lines (journal.py) say, per request key, which calls started,
how many HTTP attempts each sent and which answers came back. What DuckDB
lacks is written now: answered rows (so nothing paid for is asked again) and,
for attempts that never got an answer, the count (so reports see every request
the provider saw). A line cut short by a kill is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..store import Store
from .journal import journal_lines
from .rows import COLUMNS, write_rows

LOST_ERROR = "the process ended before this attempt's answer came back or was saved"
TIMES = ("started_at", "finished_at")


@dataclass
class KeyState:
    fixed: dict[str, Any] = field(default_factory=dict)  # the latest `start` line's columns
    tries: int = 0  # attempts since the last answer
    lost: int = 0  # attempts no answer accounts for


@dataclass
class Replayed:
    answered: int = 0
    lost_attempts: int = 0


INTS = ("sample_index", "attempts", "prompt_tokens", "completion_tokens")
FLOATS = ("cost_usd", "latency_s")


def _as_row(values: dict[str, Any]) -> tuple:
    """The row in llm_calls' types; ValueError or TypeError for a line no writer of ours wrote
    (a damaged journal), which the reader then skips."""
    for name in TIMES:
        if isinstance(values.get(name), str):
            values[name] = datetime.fromisoformat(values[name])
    for name in COLUMNS:
        value = values.get(name)
        if value is None or name in TIMES:
            continue
        kind = int if name in INTS else float if name in FLOATS else str
        if kind is str and not isinstance(value, str) or isinstance(value, (list, dict)):
            raise TypeError(f"{name}: {type(value).__name__}")
        values[name] = kind(value)
    return tuple(values.get(c) for c in COLUMNS)


def read_journal(path: Path) -> tuple[list[tuple], list[tuple]]:
    """(answered rows, one row per key with attempts that got no answer)."""
    states: dict[str, KeyState] = {}
    answered: list[tuple] = []
    for line in journal_lines(path):
        try:
            entry = orjson.loads(line)
            key, event, row = str(entry["k"]), entry["e"], entry.get("row") or {}
            state = states.setdefault(key, KeyState())
            if event == "start":
                state.fixed = dict(row)
            elif event == "try":
                state.tries += 1
            elif event == "answer":
                answered.append(_answered_row(key, state, dict(row)))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            continue  # the last line of a killed writer may be cut short; a damaged one is not ours
    lost = []
    for key, state in states.items():
        try:
            lost += [_lost_row(key, state)] if state.tries + state.lost else []
        except (TypeError, ValueError):
            continue  # its start line was damaged: the attempts cannot be placed
    return answered, lost


def _answered_row(key: str, state: KeyState, answer: dict[str, Any]) -> tuple:
    row = {**state.fixed, **answer, "request_hash": key}
    state.lost += max(0, state.tries - int(row.get("attempts") or 0))  # tries of a call cancelled before
    state.tries = 0
    return _as_row(row)


def _lost_row(key: str, state: KeyState) -> tuple:
    row = {**state.fixed, "request_hash": key, "status": "error", "error_kind": "interrupted",
           "error": LOST_ERROR, "attempts": state.tries + state.lost}  # fmt: skip
    return _as_row(row)


def replay_journal(store: Store, path: Path) -> Replayed:
    """Write what the journal holds and DuckDB lacks (the caller then empties the journal)."""
    if not path.exists() or path.stat().st_size == 0:
        return Replayed()
    answered, lost = read_journal(path)
    if answered or lost:
        write_rows(store, answered, lost)
    return Replayed(len(answered), sum(row[COLUMNS.index("attempts")] for row in lost))
