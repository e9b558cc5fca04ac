"""The spend cap (`llm.max_cost_usd`, `--max-cost-usd`): nothing more is sent once the run's recorded spend
reaches it.

The spend is what the run store's call log holds (every command before this one included, so a rerun with the
same cap stops at once) plus what this command has spent since. Calls already on the wire finish and are kept,
so a run may end a few calls past the cap; cache hits are free and still served.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError, SpendCapReached
from .cost import prices


class SpendCap:
    def __init__(self, cap_usd: float | None, store_path: Path | None):
        self.cap_usd = cap_usd
        self.where = f"the run store {store_path}" if store_path else "this command"

    def require_price(self, provider: str, model: str, own_price: tuple[float, float] | None) -> None:
        """A cap on a model nobody priced could never be reached: say so before any call."""
        if self.cap_usd is None or provider == "local" or own_price or prices(provider, model):
            return
        raise ConfigError(
            f"--max-cost-usd needs a price for model '{model}', which litellm's price map lacks: "
            "set llm.price (USD per million input and output tokens) in the config"
        )

    def check(self, spent_usd: float) -> None:
        if self.cap_usd is not None and spent_usd >= self.cap_usd:
            raise SpendCapReached(
                f"spend cap reached: ${spent_usd:.4f} recorded in {self.where}, cap ${self.cap_usd:g}; nothing more "
                "is sent and every answer is kept. Run the same command with a higher --max-cost-usd to go on"
            )
