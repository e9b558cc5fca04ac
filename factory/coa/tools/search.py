"""The `web_search` tool: a query in, the top results out, laid out as AFM's web agent sees them.

    Found 2 results:

    ## Web Results
    1. [Title](https://example.org/page)
    https://example.org/page
    snippet ...

    2. [Other](corpus://<id>)      (corpus://<id> when the corpus has no url)
    corpus://<id>
    snippet ...

The layout is AFM's `_format_results_to_string` (verl/verl/tools/web_search_v2.py
and AFM/evaluation/web_agent/web_tools.py in OPPO-PersonalAI/Agent_Foundation_Models),
byte for byte, with its "Date published:" / "Source:" lines when a backend has them.
Backends: `LocalSearchBackend` (BM25 over a local corpus, no network) and
`HttpSearchBackend` (any JSON search API; http_search.py). The argument is the
query text; a JSON {"query": ...} or ["q1", "q2"] also works (several queries
answer in turn, one block each), since models write both.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading

import duckdb

from ...errors import FactoryError
from .base import ToolResult, failure, strip_fence
from .bm25 import CorpusError, CorpusIndex, Document
from .config import LocalCorpusConfig, SearchToolConfig
from .http_search import HttpSearchBackend
from .registry import BuildContext, ToolSpec
from .results import SearchBackend, SearchError, SearchResult

MAX_QUERIES = 5  # one call may ask several queries; more is a runaway model
MAX_QUERY_CHARS = 500
SNIPPET_TERMS, SNIPPET_HITS_PER_TERM = 12, 8
VIDEO_NOTICE = "Your browser can't play this video."  # Google's snippet noise; AFM drops it too


def best_snippet(text: str, terms: list[str], width: int) -> str:
    """The `width`-character window of `text` holding the most distinct query terms."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    found = []  # (position, term) of the first few occurrences of each term; few, as the search below is quadratic
    for term in terms[:SNIPPET_TERMS]:
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)
        found += [(match.start(), term) for _, match in zip(range(SNIPPET_HITS_PER_TERM), pattern.finditer(text))]
    lead = width // 4  # a little context before the first matched word
    starts = [max(0, position - lead) for position, _ in found] or [0]
    start = max(starts, key=lambda s: (len({t for p, t in found if s <= p < s + width}), -s))
    start = min(start, len(text) - width)
    window = text[start : start + width]
    if start > 0:
        window = "…" + window.split(" ", 1)[-1]
    if start + width < len(text):
        window = window.rsplit(" ", 1)[0] + "…"
    return window


def corpus_url(document: Document) -> str:
    return document.url or f"corpus://{document.id}"


class LocalSearchBackend:
    """BM25 over a local corpus; the index is opened (built if stale) on first use."""

    def __init__(self, config: LocalCorpusConfig, snippet_chars: int = 300):
        self.config = config
        self.snippet_chars = snippet_chars
        self._index: CorpusIndex | None = None
        # A thread lock, not an asyncio one: the opening runs in a worker thread,
        # and the backend may serve more than one event loop over its life.
        self._lock = threading.Lock()

    async def index(self) -> CorpusIndex:
        try:
            return await asyncio.to_thread(self._open_once)
        except (OSError, CorpusError, duckdb.Error) as exc:
            raise SearchError(f"local corpus unavailable: {exc}") from None

    def open_now(self) -> CorpusIndex:
        """Open (or build) the index here and now; CorpusError or duckdb.Error when the corpus is unusable."""
        try:
            return self._open_once()
        except OSError as exc:
            raise CorpusError(f"{self.config.path}: cannot read the corpus ({exc.strerror or exc})") from None

    def _open_once(self) -> CorpusIndex:
        with self._lock:  # one build, however many agents search at once
            if self._index is None:
                self._index = CorpusIndex.open(self.config)
            return self._index

    async def search(self, query: str, k: int) -> list[SearchResult]:
        index = await self.index()
        try:
            hits, terms = await asyncio.to_thread(lambda: (index.search(query, k), index.query_terms(query)))
        except duckdb.Error as exc:
            raise SearchError(f"local search failed: {exc}") from None
        return [
            SearchResult(
                hit.document.title, corpus_url(hit.document), best_snippet(hit.document.text, terms, self.snippet_chars)
            )
            for hit in hits
        ]

    async def document(self, reference: str) -> Document | None:
        """A document by corpus://<id> or by its url."""
        index = await self.index()
        if reference.startswith("corpus://"):
            return await asyncio.to_thread(index.document, reference.removeprefix("corpus://"))
        return await asyncio.to_thread(index.document_by_url, reference)

    def close(self) -> None:
        if self._index is not None:
            self._index.close()


def parse_queries(argument: str) -> list[str]:
    text = strip_fence(argument)
    try:
        data = json.loads(text)
    except ValueError:
        data = text
    if not isinstance(data, (dict, list)):
        data = text  # "1984" is a query, not a number
    if isinstance(data, dict):
        data = data.get("query", data.get("queries", ""))
    queries = data if isinstance(data, list) else [data]
    return [" ".join(str(q).split())[:MAX_QUERY_CHARS] for q in queries if str(q).strip()][:MAX_QUERIES]


def format_results(query: str, results: list[SearchResult], snippet_chars: int) -> str:
    if not results:
        return f"No results found for query: '{query}'. Use a less specific query."
    entries = [format_entry(number, result, snippet_chars) for number, result in enumerate(results, 1)]
    return f"Found {len(entries)} results:\n\n## Web Results\n" + "\n\n".join(entries)


def format_entry(number: int, result: SearchResult, snippet_chars: int) -> str:
    link = result.url or "#"
    dated = f"\nDate published: {result.date}" if result.date is not None else ""
    source = f"\nSource: {result.source}" if result.source is not None else ""
    snippet = result.snippet if len(result.snippet) <= snippet_chars else result.snippet[:snippet_chars] + "…"
    snippet = snippet.replace(VIDEO_NOTICE, "")
    return f"{number}. [{result.title or 'No Title'}]({link}){dated}{source}\n{link}\n{snippet}".strip()


class WebSearchTool:
    name = "web_search"

    def __init__(self, config: SearchToolConfig, backend: SearchBackend):
        self.config = config
        self.backend = backend

    async def __call__(self, argument: str) -> ToolResult:
        queries = parse_queries(argument)
        if not queries:
            return failure("Error: empty search query", reason="empty")
        sections, counts = [], []
        for query in queries:
            try:
                results = await self.backend.search(query, self.config.top_k)
            except SearchError as exc:
                return failure(f"Search failed: {exc}", query=query, backend=self.config.backend)
            sections.append(format_results(query, results, self.config.snippet_chars))
            counts.append(len(results))
        return ToolResult(
            True, "\n\n".join(sections), {"backend": self.config.backend, "queries": queries, "n_results": counts}
        )


def build_web_search(config: SearchToolConfig, context: BuildContext) -> WebSearchTool:
    """Search over the toolbox's local corpus, or over the HTTP API the config describes."""
    if config.backend == "local":
        return WebSearchTool(config, opened(context.corpus))
    return WebSearchTool(config, HttpSearchBackend(config.http))


def opened(corpus: LocalSearchBackend) -> LocalSearchBackend:
    """The local corpus with its index open (built if stale), or one line naming the file: a wrong
    corpus would fail every search, so it is said before any agent asks."""
    try:
        corpus.open_now()
    except (CorpusError, duckdb.Error) as exc:
        reason = " ".join(str(exc).split())[:400]
        raise FactoryError(f"web_search: the local corpus cannot be searched: {reason}") from None
    return corpus


SPEC = ToolSpec(
    name="web_search", config=SearchToolConfig, build=build_web_search, argument="the query", parameter="query", variants=("mas",),
    aliases=("search", "google_search", "bing_search"), rl_domains=("qa",), order=10,
)  # fmt: skip
