"""What a model's tokens cost, for an estimate: the config's `llm.price`, else litellm's price map; the embedded
model is free unless priced. `cost(...)` takes a multiplier, so a discounted mode (batch APIs price at a share of
the normal rate) prices its estimate with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FactoryError
from ..llm import LLMConfig
from ..llm.cost import prices
from ..llm.providers import resolve_endpoint

EMBEDDED = "the embedded model"
PRICE_HINT = "set llm.price (input_usd_per_mtok, output_usd_per_mtok) in the config to price it"


@dataclass(frozen=True)
class Pricing:
    per_token: tuple[float, float] | None  # USD per (prompt, completion) token; None: nobody knows
    source: str  # "llm.price", "litellm's price map", EMBEDDED (free), "unknown"
    multiplier: float = 1.0  # e.g. a batch discount (0.5)

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float | None:
        if self.per_token is None:
            return None
        return (prompt_tokens * self.per_token[0] + completion_tokens * self.per_token[1]) * self.multiplier

    def describe(self) -> str:
        if self.per_token is None:
            return f"price unknown: {PRICE_HINT}"
        if self.source == EMBEDDED:
            return f"free ({EMBEDDED}: it runs on this machine; llm.price prices its calls if you count the hardware)"
        shown = f"${self.per_token[0] * 1e6:g} / ${self.per_token[1] * 1e6:g} per M tokens in / out"
        discount = f", x{self.multiplier:g}" if self.multiplier != 1.0 else ""
        return f"{shown} ({self.source}{discount})"


def pricing_for(config: LLMConfig, multiplier: float = 1.0) -> Pricing:
    """How the run would price `config.model`'s calls (as factory.llm.cost.call_cost does; in batch mode as
    factory.llm.batch.setup.batch_price does, refusing a model without a batch API as the run would)."""
    if config.batch.enabled:
        return batch_pricing(config, multiplier)
    if config.price is not None:
        return Pricing(config.price.per_token(), "llm.price", multiplier)
    provider, model = _provider_and_model(config)
    if provider == "local":
        return Pricing((0.0, 0.0), EMBEDDED, multiplier)
    unit = prices(provider, model)
    return Pricing(unit, "litellm's price map" if unit else "unknown", multiplier)


def _provider_and_model(config: LLMConfig) -> tuple[str, str]:
    try:
        endpoint = resolve_endpoint(config)  # no network; a missing API key raises, which a dry run does not need
        return endpoint.provider, endpoint.model
    except FactoryError:
        model = (config.model or "local").strip()
        return (model.split("/", 1)[0] if "/" in model else "litellm"), model


def batch_pricing(config: LLMConfig, multiplier: float) -> Pricing:
    from ..llm.batch.setup import batch_price, batch_protocol

    batch_protocol(config)  # the same one-line refusal as the run's, before anything is estimated
    provider, model = _provider_and_model(config)
    unit = batch_price(config, provider, model)
    source = f"batch price: litellm's batch price, else x{config.batch.discount:g} of the normal one"
    return Pricing(unit, source if unit else "unknown", multiplier)
