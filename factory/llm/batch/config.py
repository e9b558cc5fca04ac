"""The `llm.batch` config section: when and how requests go through a provider's batch API."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ...config import StrictModel

# Per batch: OpenAI takes 50,000 requests in an input file of up to 200 MB; Anthropic 100,000 requests
# or 256 MB. None in the config means the provider's own limit.
PROVIDER_LIMITS = {"openai": (50_000, 200 * 10**6), "anthropic": (100_000, 256 * 10**6)}


class BatchConfig(StrictModel):
    """Provider batch APIs: half the price, answers within the completion window instead of seconds."""

    enabled: bool = Field(False, description="send requests through the provider's batch API (--batch)")
    poll_interval_s: float = Field(30, gt=0, description="seconds between two looks at a running batch")
    collect_window_s: float = Field(
        2.0, ge=0, description="a batch is submitted once no new request has come for this long"
    )
    max_requests: int | None = Field(None, ge=1, description="requests per batch (default: the provider's limit)")
    max_bytes: int | None = Field(None, ge=1024, description="bytes per batch (default: the provider's limit)")
    completion_window: Literal["24h"] = "24h"
    discount: float = Field(
        0.5, gt=0, le=1, description="batch price / normal price, where litellm's map has no batch price"
    )
    in_flight: int = Field(
        10_000, ge=1, description="requests waiting in batches at once (llm.concurrency's role in batch mode)"
    )

    def limits(self, protocol: str) -> tuple[int, int]:
        """(requests, bytes) per batch for this protocol."""
        requests, size = PROVIDER_LIMITS[protocol]
        return self.max_requests or requests, self.max_bytes or size
