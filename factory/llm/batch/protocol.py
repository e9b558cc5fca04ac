"""What the batching transport needs from a provider's batch API, and the state it gets back.

Each protocol (openai_api.py, anthropic_api.py) encodes one request as bytes (a JSONL line, a JSON
item), submits a list of them as one batch, reports the batch's state, and reads its results as
one Reply or TransportError per custom id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..transport import Reply, TransportError

Outcome = Reply | TransportError


@dataclass
class BatchState:
    batch_id: str
    status: str  # the provider's own word: in_progress, completed, expired, ended, ...
    done: bool  # no request of it will change any more
    counts: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # output_file_id, error_file_id, results_url
    error: str | None = None  # why the whole batch failed, if it did


class BatchAPI(Protocol):
    name: str  # "openai" or "anthropic": the key of its limits and of its rows in the ledger
    base_url: str

    def encode(self, custom_id: str, body: dict[str, Any]) -> bytes: ...

    async def submit(self, items: list[bytes]) -> BatchState: ...

    async def poll(self, batch_id: str) -> BatchState: ...

    async def results(self, state: BatchState) -> dict[str, Outcome]: ...

    async def close(self) -> None: ...


def missing_result(custom_id: str, state: BatchState) -> TransportError:
    """A request the batch's results do not mention (a garbled line, a batch ended early): retryable."""
    if state.error:
        return TransportError("bad_request", f"the batch {state.batch_id} failed: {state.error}")
    return TransportError(
        "bad_response", f"batch {state.batch_id} ({state.status}) returned no readable result for this request"
    )


EXPIRED = "the batch's completion window ended before this request ran"
