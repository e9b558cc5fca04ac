"""`factory report RUN_DIR`: one self-contained HTML page of a run's funnels, filters, shapes and LLM usage.

All numbers are DuckDB aggregates over the run store (`data_*.py`); charts are
inline SVG drawn in Python (`svg.py`), so the page needs no network and no script.
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".build": ("REPORT_FILENAME", "collect_report", "render_report", "write_report"),
    },
)

__all__ = ["REPORT_FILENAME", "collect_report", "render_report", "write_report"]
