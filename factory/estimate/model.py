"""An estimate's parts: per stage, rows of requests, prompt and completion tokens and cost, each as the expected
figure and the most the settings allow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .pricing import Pricing


@dataclass
class Span:
    """One quantity as (expected, most)."""

    expected: float = 0.0
    most: float = 0.0

    def __add__(self, other: Span) -> Span:
        return Span(self.expected + other.expected, self.most + other.most)

    def times(self, factor: float) -> Span:
        return Span(self.expected * factor, self.most * factor)


@dataclass
class Part:
    """One kind of call in a stage (the script writer's, the planner's, a rollout)."""

    name: str
    requests: Span
    prompt_tokens: Span
    completion_tokens: Span
    pricing: Pricing

    def cost(self) -> tuple[float | None, float | None]:
        return (
            self.pricing.cost(self.prompt_tokens.expected, self.completion_tokens.expected),
            self.pricing.cost(self.prompt_tokens.most, self.completion_tokens.most),
        )


@dataclass
class StageEstimate:
    stage: str
    model: str
    items: int  # personas, tasks or rollouts left to do
    unit: str  # "persona", "task", "rollout"
    done: int  # finished before, not counted
    token_method: str
    pricing: Pricing
    parts: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    most_requests: float | None = None  # where a budget bounds the calls of all parts together (refine.budget)

    def total(self) -> Part:
        total = total_of(self.parts, self.pricing)
        if self.most_requests is not None:
            total.requests.most = min(total.requests.most, self.most_requests)
        return total


def total_of(parts: list[Part], pricing: Pricing) -> Part:
    """The parts' requests and tokens summed (their cost: summed_cost, each part at its own price)."""
    requests, prompt, completion = Span(), Span(), Span()
    for part in parts:
        requests, prompt, completion = (
            requests + part.requests,
            prompt + part.prompt_tokens,
            completion + part.completion_tokens,
        )
    return Part("total", requests, prompt, completion, pricing)


def summed_cost(parts: list[Part]) -> tuple[float | None, float | None]:
    """(expected, most) USD over the parts that send anything; unknown when one of them is unpriced."""
    costs = [part.cost() for part in parts if part.requests.most]
    if any(expected is None for expected, _ in costs):
        return None, None
    return sum(c[0] for c in costs), sum(c[1] for c in costs)


def stage_json(estimate: StageEstimate) -> dict[str, Any]:
    def part_json(part: Part, cost: tuple[float | None, float | None]) -> dict[str, Any]:
        return {"name": part.name, "requests": vars(part.requests), "prompt_tokens": vars(part.prompt_tokens),
                "completion_tokens": vars(part.completion_tokens), "cost_usd": dict(zip(("expected", "most"), cost))}  # fmt: skip

    return {
        "stage": estimate.stage, "model": estimate.model, "items": estimate.items, "unit": estimate.unit,
        "done_before": estimate.done, "token_method": estimate.token_method, "price": estimate.pricing.describe(),
        "parts": [part_json(p, p.cost()) for p in estimate.parts],
        "total": part_json(estimate.total(), summed_cost(estimate.parts)), "notes": estimate.notes,
    }  # fmt: skip
