"""Personas in the run store (table `personas`, migration 0004_personas)."""

from __future__ import annotations

from typing import Iterable

from ..store import Store, utcnow
from .model import Persona


def save_personas(store: Store, personas: Iterable[Persona]) -> int:
    """Insert personas not stored yet; returns how many were new.

    Idempotent: a persona whose id is already there keeps its first row (and
    its created_at), so re-running a stage adds nothing twice.
    """
    unique: dict[str, Persona] = {}
    for persona in personas:
        unique.setdefault(persona.id, persona)
    if not unique:
        return 0
    now = utcnow()
    rows = list(unique.values())
    columns = {"persona_id": [p.id for p in rows], "text": [p.text for p in rows], "source": [p.source for p in rows],
               "parent_id": [p.parent_id for p in rows], "created_at": [now] * len(rows)}  # fmt: skip
    before = _count(store)
    store.insert_rows("personas", columns, verb="INSERT OR IGNORE")
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
