"""What every stage's estimate reads: the run store (read-only, possibly absent), a token counter per model, the
calls already answered, and the completion sizes to expect."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..llm import LLMConfig, Request
from ..store import Store
from .history import answered_keys, cache_key, calibration, mean_completion
from .pricing import Pricing, pricing_for
from .tokens import TokenCounter, pick_counter

# Completion tokens per call when the store has no history of the stage: a stated guess, never below what a
# schema-bound reply of that role needs. The upper bound is always the request's max_tokens.
DEFAULT_COMPLETION = {"script": 1500, "trajectory": 1200, "thoughts": 500, "coa": 300, "passrate": 600}


@dataclass
class EstimateContext:
    store: Store | None
    price_multiplier: float = 1.0  # a discounted mode's share of the normal price (batch APIs: 0.5)
    _counters: dict[str, TokenCounter] = field(default_factory=dict)
    _answered: set[str] | None = None

    def counter(self, model: str) -> TokenCounter:
        if model not in self._counters:
            self._counters[model] = pick_counter(model, calibration(self.store, model))
        return self._counters[model]

    def pricing(self, config: LLMConfig) -> Pricing:
        return pricing_for(config, self.price_multiplier)

    def answered(self, config: LLMConfig, request: Request) -> bool:
        """True when the run would get this request's answer from its call log instead of the model."""
        if self._answered is None:
            self._answered = answered_keys(self.store, config)
        return config.cache and cache_key(config, request) in self._answered

    def completion(self, model: str, stage_like: str, kind: str, max_tokens: int) -> tuple[float, str]:
        """(expected completion tokens per call, where the figure comes from)."""
        seen = mean_completion(self.store, model, stage_like)
        if seen is not None:
            return min(seen, max_tokens), "mean of the store's answered calls"
        default = DEFAULT_COMPLETION[kind]
        return min(default, max_tokens), f"default {default}" + (
            ", capped by max_tokens" if default > max_tokens else ""
        )
