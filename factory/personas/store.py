"""Personas in the run store (table `personas`, migration 0004_personas)."""

from __future__ import annotations

from typing import Iterable

import pyarrow as pa

from ..store import Store, utcnow
from .model import Persona

_BATCH_SCHEMA = pa.schema(
    [("persona_id", pa.string()), ("text", pa.string()), ("source", pa.string()),
     ("parent_id", pa.string()), ("created_at", pa.timestamp("us"))]
)  # fmt: skip
_COLUMNS = ", ".join(_BATCH_SCHEMA.names)


def save_personas(store: Store, personas: Iterable[Persona]) -> int:
    """Insert personas not stored yet; returns how many were new.

    Idempotent: a persona whose id is already there keeps its first row (and
    its created_at), so re-running a stage adds nothing twice.
    """
    unique: dict[str, Persona] = {}
    for persona in personas:
        unique.setdefault(persona.id, persona)  # DuckDB rejects a key twice in one statement
    if not unique:
        return 0
    now = utcnow()
    rows = list(unique.values())
    batch = pa.table(
        [[p.id for p in rows], [p.text for p in rows], [p.source for p in rows],
         [p.parent_id for p in rows], [now] * len(rows)],
        schema=_BATCH_SCHEMA,
    )  # fmt: skip
    before = _count(store)
    with store.arrow_view("persona_batch", batch), store.transaction() as con:
        con.execute(f"INSERT OR IGNORE INTO personas ({_COLUMNS}) SELECT {_COLUMNS} FROM persona_batch")
    return _count(store) - before


def stored_personas(store: Store, source: str | None = None) -> list[Persona]:
    """The stored personas (optionally of one source), oldest first, then by id."""
    sql = "SELECT persona_id, text, source, parent_id FROM personas"
    params: list = []
    if source is not None:
        sql += " WHERE source = ?"
        params.append(source)
    rows = store.query(sql + " ORDER BY created_at, persona_id", params)
    return [Persona(id=r[0], text=r[1], source=r[2], parent_id=r[3]) for r in rows]


def _count(store: Store) -> int:
    return store.query("SELECT count(*) FROM personas")[0][0]
