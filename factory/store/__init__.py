"""The run store: one SQLite file per run folder, queried with DuckDB (DESIGN rule 2)."""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".db": ("STORE_FILENAME", "Store", "utcnow"),
        ".migrations": ("MIGRATIONS",),
    },
)

__all__ = ["MIGRATIONS", "STORE_FILENAME", "Store", "utcnow"]
