"""Declarative filters over a run's store: each compiles to SQL and writes one verdict per trajectory.

    from factory.filters import run_filters, format_funnel
    funnel = run_filters("outputs/coa", "filters.yaml")
    print(format_funnel(funnel))

Nothing is deleted from `trajectories`: verdicts go to `filter_verdicts` (one row
per trajectory and filter, with the reason), and the `curation` view folds them
into keep / weight / split per trajectory. The YAML format, the built-ins and
the incremental rules are in docs/filters.md.
"""

from .config import KINDS, FilterConfig, FilterSpec, load_filter_config, parse_filters
from .funnel import FilterFunnel, FilterOutcome, format_funnel
from .runner import FilterRun, run_filters

__all__ = [
    "KINDS", "FilterConfig", "FilterFunnel", "FilterOutcome", "FilterRun", "FilterSpec",
    "format_funnel", "load_filter_config", "parse_filters", "run_filters",
]  # fmt: skip
