"""The HTTP attempts on the wire right now, and the time-outs and retries so far, in this process.

A call log row is written when a call ends, so a run whose every attempt is still
decoding (or timing out and being sent again) showed "errors 0, tokens 0" and
"HTTP attempts: 0" for as long as that lasted. The sender tells this register when
an attempt starts and ends, a streaming transport how many tokens it has read; the
progress bar shows it while it happens:

    on the wire 3 (oldest 42s, 118 tok streamed), timeouts 1, retries 1
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

TOTALS = ("attempts_started", "timeouts", "retries", "streamed_tokens")


@dataclass
class Attempt:
    key: str
    number: int
    started: float
    tokens: int = 0


class InFlight:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._open: dict[int, Attempt] = {}
        self.started = self.timeouts = self.retries = self.streamed = 0

    def begin(self, key: str, number: int) -> int:
        with self._lock:
            ticket = next(self._ids)
            self._open[ticket] = Attempt(key, number, time.monotonic())
            self.started += 1
            self.retries += number > 1
            return ticket

    def streamed_token(self, ticket: int | None, count: int = 1) -> None:
        if ticket is None:
            return
        with self._lock:
            attempt = self._open.get(ticket)
            if attempt is not None:
                attempt.tokens += count
                self.streamed += count

    def end(self, ticket: int, timed_out: bool = False) -> None:
        with self._lock:
            self._open.pop(ticket, None)
            self.timeouts += timed_out

    def snapshot(self) -> dict[str, Any]:
        """JSON-able figures: attempts open now, the oldest one's age, tokens they streamed; totals so far."""
        now = time.monotonic()
        with self._lock:
            open_ = list(self._open.values())
            return {
                "on_the_wire": len(open_),
                "oldest_s": round(max((now - a.started for a in open_), default=0.0), 1),
                "streaming_tokens": sum(a.tokens for a in open_),
                "attempts_started": self.started,
                "timeouts": self.timeouts,
                "retries": self.retries,
                "streamed_tokens": self.streamed,
            }


def describe(figures: dict[str, Any] | None) -> str:
    """ "on the wire 3 (oldest 42s, 118 tok streamed), timeouts 1, retries 1"; "" when nothing happened yet."""
    if not figures or not figures.get("attempts_started"):
        return ""
    parts = []
    if figures["on_the_wire"]:
        streamed = f", {figures['streaming_tokens']} tok streamed" if figures["streaming_tokens"] else ""
        parts.append(f"on the wire {figures['on_the_wire']} (oldest {figures['oldest_s']:.0f}s{streamed})")
    parts += [f"{name} {figures[name]}" for name in ("timeouts", "retries") if figures[name]]
    return ", ".join(parts)


IN_FLIGHT = InFlight()  # one per process: a run is one process, and every client's sender reports here


def since(start: dict[str, Any]) -> dict[str, Any]:
    """The register's figures now, its running totals counted from the snapshot `start`."""
    now = IN_FLIGHT.snapshot()
    return {**now, **{name: now[name] - start[name] for name in TOTALS}}
