"""Cost from litellm's price map, read from the JSON file litellm ships
(importing litellm costs seconds; reading its table costs milliseconds)."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

PRICE_FILE = "model_prices_and_context_window_backup.json"


@lru_cache(maxsize=1)
def price_map() -> dict:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(list(spec.submodule_search_locations)[0]) / PRICE_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@lru_cache(maxsize=1024)
def prices(provider: str, model: str, suffix: str = "") -> tuple[float, float] | None:
    """(input, output) USD per token, or None when the model is not priced. suffix "_batches": the
    provider's batch API prices, where the map has them."""
    table = price_map()
    for key in (f"{provider}/{model}", model, model.split("/", 1)[-1]):
        entry = table.get(key)
        if isinstance(entry, dict) and f"input_cost_per_token{suffix}" in entry:
            return float(entry[f"input_cost_per_token{suffix}"]), float(
                entry.get(f"output_cost_per_token{suffix}") or 0.0
            )
    return None


def call_cost(
    provider: str,
    model: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    price: tuple[float, float] | None = None,
) -> float | None:
    """USD for one call; None when the price or the token counts are unknown. `price` (USD per token, input and
    output) is the config's own and wins over litellm's map, also for the embedded model."""
    if prompt_tokens is None or (provider == "local" and price is None):
        return None
    unit = price or prices(provider, model)
    if unit is None:
        return None
    return prompt_tokens * unit[0] + (completion_tokens or 0) * unit[1]
