"""What every stage's estimate reads: the run store (read-only, possibly absent), a token counter per model, the
calls already answered, and the completion sizes to expect."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..llm import LLMConfig, Request
from ..store import Store
from .history import answered_keys, cache_key, calibration, mean_completion
from .tokens import TokenCounter, pick_counter

# Completion tokens per call when the store has no history of the stage: a stated guess, never below what a
# schema-bound reply of that role needs. The upper bound is always the request's max_tokens.
DEFAULT_COMPLETION = {"script": 1500, "trajectory": 1200, "thoughts": 500, "coa": 300, "passrate": 600}


@dataclass
class EstimateContext:
    store: Store | None
    _counters: dict[str, TokenCounter] = field(default_factory=dict)
    _answered: set[str] | None = None
    notes: list[str] = field(default_factory=list)  # one line per default assumed, printed under the stage

    def counter(self, model: str) -> TokenCounter:
        if model not in self._counters:
            self._counters[model] = pick_counter(model, calibration(self.store, model))
        return self._counters[model]

    def answered(self, config: LLMConfig, request: Request) -> bool:
        """True when the run would get this request's answer from its call log instead of the model."""
        if self._answered is None:
            self._answered = answered_keys(self.store, config)
        return config.cache and cache_key(config, request) in self._answered

    def completion(self, model: str, stage_like: str, kind: str, max_tokens: int) -> tuple[float, str]:
        """(expected completion tokens per call, where the figure comes from)."""
        seen = mean_completion(self.store, model, stage_like)
        if seen is not None:
            return min(seen, max_tokens), "the store's answered calls"
        return min(DEFAULT_COMPLETION[kind], max_tokens), f"default {DEFAULT_COMPLETION[kind]} per call"
