"""What a web_search backend answers: results, or a `SearchError` whose message becomes the observation.

Shared by the local BM25 backend (search.py) and the HTTP one (http_search.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class SearchError(Exception):
    """The search could not be answered; the message is the observation."""


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str | None
    snippet: str
    date: str | None = None  # shown as AFM shows Serper's "date" and "source" when a backend has them
    source: str | None = None


class SearchBackend(Protocol):
    async def search(self, query: str, k: int) -> list[SearchResult]: ...
