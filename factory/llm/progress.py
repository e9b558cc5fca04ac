"""What a progress bar says about the calls behind it: errors, tokens and spend.

    with tqdm(total=n, desc="coa") as bar, CallCounter([client], bar):
        ...                                   # the bar's postfix: "errors 1, tokens 12.3k, $0.0042"

Each LLMClient keeps running counts of the calls it sent (cache hits cost nothing and
are not counted); a CallCounter reads them a few times a second, never per call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from .inflight import IN_FLIGHT, since
from .inflight import describe as describe_wire

if TYPE_CHECKING:
    from .request import Result

REFRESH_S = 0.5


@dataclass
class CallCounts:
    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    priced: int = 0  # calls with a price (litellm's price map)
    unpriced: int = 0  # calls to a paid provider whose model the price map lacks

    def add(self, result: Result, provider: str | None) -> None:
        self.calls += 1
        self.errors += 0 if result.ok else 1
        self.prompt_tokens += result.prompt_tokens or 0
        self.completion_tokens += result.completion_tokens or 0
        if result.cost_usd is not None:
            self.cost_usd += result.cost_usd
            self.priced += 1
        elif provider != "local":  # the embedded model is free, not unpriced
            self.unpriced += 1


def total(counts: Iterable[CallCounts]) -> CallCounts:
    whole = CallCounts()
    for part in counts:
        for name in vars(whole):
            setattr(whole, name, getattr(whole, name) + getattr(part, name))
    return whole


def short_number(n: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:g}"


def dollars(usd: float) -> str:
    """Enough digits to see a cheap model's spend move: $12.34, $0.1234, $0.000045."""
    return f"${usd:.2f}" if usd >= 1 else f"${usd:.4f}" if usd >= 0.01 else f"${usd:.6f}"


def postfix(counts: CallCounts, wire: dict | None = None) -> str:
    """ "errors 2, tokens 1.2k, $0.0031, on the wire 4 (oldest 40s, 210 tok streamed), timeouts 1"; cost reads
    "cost ?" when no call was priced (a "+?" when some were not), and is left out for the free embedded model.
    `wire`: the in-flight register's figures (inflight.py), so a bar moves while no call has finished yet."""
    parts = [f"errors {counts.errors}", f"tokens {short_number(counts.prompt_tokens + counts.completion_tokens)}"]
    if counts.priced:
        parts.append(dollars(counts.cost_usd) + ("+?" if counts.unpriced else ""))
    elif counts.unpriced:
        parts.append("cost ?")
    on_the_wire = describe_wire(wire)
    return ", ".join([*parts, on_the_wire] if on_the_wire else parts)


class CallCounter:
    """Keeps `bar`'s postfix on the clients' counts while the block runs (inside an event loop)."""

    def __init__(self, clients: Iterable[Any], bar: Any):
        self.clients = list(clients)
        self.bar = bar
        self._task: asyncio.Task | None = None
        self._shown = ""
        self._wire_start = IN_FLIGHT.snapshot()  # the bar's time-outs and retries are its block's own

    def show(self) -> None:
        if not self.clients or getattr(self.bar, "disable", False):
            return
        text = postfix(total(client.counts for client in self.clients), since(self._wire_start))
        if text != self._shown:  # a redraw only when a figure moved: a log of the bar stays short
            self.bar.set_postfix_str(text)
            self._shown = text

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            self.show()

    def __enter__(self) -> "CallCounter":
        if not getattr(self.bar, "disable", False):
            self._task = asyncio.get_running_loop().create_task(self._refresh())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._task is not None:
            self._task.cancel()
        self.show()  # the final figures, whatever the last refresh saw
