"""The run store: one DuckDB file per run folder (DESIGN rule 2)."""

from .db import STORE_FILENAME, Store, utcnow
from .migrations import MIGRATIONS

__all__ = ["MIGRATIONS", "STORE_FILENAME", "Store", "utcnow"]
