"""Declarative filters over a run's store: each compiles to SQL and writes one verdict per trajectory.

    from factory.filters import run_filters, format_funnel
    funnel = run_filters("outputs/coa", "filters.yaml")
    print(format_funnel(funnel))

Nothing is deleted from `trajectories`: verdicts go to `filter_verdicts` (one row
per trajectory and filter, with the reason), and the `curation` view folds them
into keep / weight / split per trajectory. The YAML format, the built-ins and
the incremental rules are in docs/filters.md.
"""

from ..lazy_exports import lazy_exports

# The public API, imported on first use (factory/lazy_exports.py says why).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".config": ("KINDS", "FilterConfig", "FilterSpec", "load_filter_config", "parse_filters"),
        ".funnel": ("FilterFunnel", "FilterOutcome", "format_funnel"),
        ".runner": ("FilterRun", "run_filters"),
    },
)

__all__ = [
    "KINDS", "FilterConfig", "FilterFunnel", "FilterOutcome", "FilterRun", "FilterSpec",
    "format_funnel", "load_filter_config", "parse_filters", "run_filters",
]  # fmt: skip
