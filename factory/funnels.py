"""Each generation path's funnel, read from a run's store (the dataset card and the report show them)."""

from __future__ import annotations

from .coa.store import coa_funnel
from .refine.store import refine_funnel
from .store import Store


def path_funnels(store: Store) -> dict[str, dict[str, int]]:
    """refine / coa / import funnels, only for the paths this run used."""
    found = {"refine": refine_funnel(store), "coa": coa_funnel(store, "coa"), "import": coa_funnel(store, "import")}
    return {path: funnel for path, funnel in found.items() if any(funnel.values())}
