"""The decontaminated gate: a synthesized task shares no n-gram with a named evaluation set.

The same SQL as the `decontaminate` filter kind (factory/filters/decontam.py), run in an
in-memory DuckDB over the candidates' question and first answer, so a task the gate
keeps is one the filter would keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..filters.decontam import contaminated_sql, eval_items, index_statements
from .candidate import Candidate


@dataclass
class EvalNgrams:
    connection: duckdb.DuckDBPyConnection
    n: int

    @classmethod
    def load(cls, paths: list[Path], n: int = 12, query_ngrams: bool = False) -> EvalNgrams:
        connection = duckdb.connect()
        for statement in index_statements(eval_items(paths), n, query_ngrams):
            connection.execute(statement)
        return cls(connection, n)

    def hit(self, text: str) -> tuple[str, str] | None:
        """(evaluation set, shared n-gram) or None."""
        self.connection.execute("CREATE OR REPLACE TEMP TABLE decontam_texts AS SELECT 1 AS id, ? AS text", [text])
        row = self.connection.execute(contaminated_sql("decontam_texts", self.n)).fetchone()
        return (row[2], row[1]) if row else None

    def judge(self, candidate: Candidate) -> bool:
        answer = candidate.task.answers[0] if candidate.task.answers else ""
        found = self.hit(f"{candidate.task.question} {answer}")
        if found:
            return candidate.judge("decontaminated", False, f"contaminated: {found[0]} ({found[1]})")
        return candidate.judge("decontaminated", True)
