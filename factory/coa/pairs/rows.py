"""The `preference_pairs` rows this stage owns (source 'coa'), written one statement at a time.

Each pair is written the moment it is decided (one statement by its id, atomic), so a
run killed mid-way keeps every pair it decided, and the LLM answers it paid for stay in the call
log for the rerun. A rerun that decides no pair where one was stored (the rollouts changed, or
the label asked for) removes it: the table holds the latest decision per trajectory and model.
"""

from __future__ import annotations

from typing import Any

from ...store import Store
from .rule import KINDS


def write_pair(store: Store, row: dict[str, Any]) -> None:
    """Insert the pair, or update it in place: a rerun keeps the row's first `created_at`."""
    names = ", ".join(row)
    updates = ", ".join(f"{name} = excluded.{name}" for name in row if name not in ("pair_id", "created_at"))
    store.execute(
        f"INSERT INTO preference_pairs ({names}) VALUES ({', '.join('?' * len(row))}) "
        f"ON CONFLICT (pair_id) DO UPDATE SET {updates}",
        list(row.values()),
    )


def drop_pair(store: Store, pair_id: str) -> None:
    store.execute("DELETE FROM preference_pairs WHERE pair_id = ?", [pair_id])


def stored_counts(store: Store, model: str) -> dict[str, int]:
    """coa pairs in the table by kind, for one recall model."""
    rows = dict(store.query(
        "SELECT kind, count(*) FROM preference_pairs WHERE source = 'coa' "
        "AND json_extract_string(evidence, '$.recall.model') = ? GROUP BY 1", [model]))  # fmt: skip
    return {kind: rows.get(kind, 0) for kind in KINDS}
