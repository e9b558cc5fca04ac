"""The `crawl_page` tool: URLs (or corpus://<id>) in, each page summarised toward the agent's goal out.

- The argument is one URL or several separated by "|" (AFM's form; a markdown
  link "[title](url)" works too), at most MAX_PAGES.
- With a summarizer (summary.py: one LLM call per page through factory.llm,
  the run's default), the observation is AFM's: "Page 1 [url] Summary:\n..."
  per page, steered by the goal (the question, the last web_search query and
  the agent's reasoning for the call); a page that cannot be read is
  "Page 1 [url]: [Page content not accessible: ...]". Without one (tool tests,
  `crawl_page.summarize: false`), each page's text as read.

- corpus://<id>, and any URL that a document of the local corpus carries, is
  answered from the corpus: no network, and offline runs stay reproducible.
- Otherwise only http(s) is fetched (file://, ftp://, data: ... are refused),
  with redirects followed by hand so that every hop is checked again; the body
  is capped at `max_bytes` and the whole fetch at `timeout_s`.
- Unless `allow_private_addresses`, hosts that are (or resolve to) loopback,
  private, link-local or reserved addresses are refused: the agent picks the
  URL, and it should not reach this machine or a cloud metadata endpoint.
- HTML becomes text (html_text.py); text/* and JSON are shown as they are.
  A page read is "Title: ...\nURL: ...\n\n<text>", capped at `max_chars`.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urljoin, urlsplit

from .base import Goal, ToolResult, cap_text, failure, strip_fence
from .bm25 import Document
from .config import CrawlToolConfig
from .fetch import TRANSPORT_ERRORS, Fetched, describe_error, fetch, is_ip_literal, is_public_address, session
from .html_text import html_to_text
from .registry import BuildContext, ToolSpec
from .search import LocalSearchBackend, SearchError
from .summary import PageSummarizer

MAX_PAGES = 5  # one call may read several pages; more is a runaway model
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^\s)]+)\)")
HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"application/json", "application/xml", "application/javascript", ""}  # "": the server did not say


class Refused(Exception):
    """The URL may not be fetched; the message says why."""


def parse_targets(argument: str) -> list[str]:
    """The URLs of the argument: "|"-separated parts, each a markdown link's target or its first word."""
    urls = []
    for part in strip_fence(argument).split("|"):
        link = MARKDOWN_LINK.search(part)
        words = part.split()
        url = link.group(1) if link else words[0].strip("<>\"'`") if words else ""
        if url:
            urls.append(url)
    return urls[:MAX_PAGES]


def check_url(url: str, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        scheme = f"'{parts.scheme}://'" if parts.scheme else "a URL without a scheme"
        raise Refused(f"crawl_page fetches only http:// and https:// URLs, not {scheme}")
    if not parts.hostname:
        raise Refused(f"no host in {url!r}")
    if not allow_private and is_ip_literal(parts.hostname) and not is_public_address(parts.hostname):
        raise Refused(f"{parts.hostname} is a private or local address, which crawl_page may not fetch")


def page_text(answer: Fetched) -> tuple[str, str]:
    """(title, text) of a fetched page; Refused for content that is not text."""
    kind = answer.content_type
    if kind not in HTML_TYPES and not kind.startswith("text/") and kind not in TEXT_TYPES:
        raise Refused(f"the page is {kind}, not text or HTML")
    markup = answer.body.decode(answer.charset or "utf-8", errors="replace")
    if kind in HTML_TYPES or (kind == "" and "<html" in markup[:2000].lower()):
        return html_to_text(markup)
    return "", markup


def render(title: str, url: str, text: str, max_chars: int, cut_bytes: int | None) -> tuple[str, bool]:
    body, truncated = cap_text(text.strip() or "(the page has no text)", max_chars)
    header = (f"Title: {title}\n" if title else "") + f"URL: {url}\n"
    note = f"\n[page cut at {cut_bytes} bytes]" if cut_bytes else ""
    return f"{header}\n{body}{note}", truncated or bool(cut_bytes)


class CrawlPageTool:
    name = "crawl_page"
    takes_goal = True

    def __init__(self, config: CrawlToolConfig | None = None, corpus: LocalSearchBackend | None = None,
                 summarizer: PageSummarizer | None = None):  # fmt: skip
        self.config = config or CrawlToolConfig()
        self.corpus = corpus
        self.summarizer = summarizer

    async def __call__(self, argument: str, goal: Goal | None = None) -> ToolResult:
        urls = parse_targets(argument)
        if not urls:
            return failure("Error: no URL given", reason="empty")
        reads = await asyncio.gather(*(self.read(url) for url in urls))
        if self.summarizer is not None:
            return await self.summarizer.summarize(list(zip(urls, reads)), goal or Goal())
        if len(reads) == 1:
            return reads[0]
        return ToolResult(
            any(read.ok for read in reads),
            "\n\n".join(read.text for read in reads),
            {"pages": [read.meta for read in reads]},
        )

    async def read(self, url: str) -> ToolResult:
        """One page as text (ok), or why it could not be read (not ok)."""
        document = await self.from_corpus(url)
        if isinstance(document, ToolResult):
            return document
        if document is not None:
            text, truncated = render(document.title, url, document.text, self.config.max_chars, None)
            return ToolResult(True, text, {"url": url, "source": "corpus", "truncated": truncated})
        return await self.from_web(url)

    async def from_web(self, url: str) -> ToolResult:
        try:
            check_url(url, self.config.allow_private_addresses)
            answer = await self.fetch_following_redirects(url)
        except Refused as exc:
            return failure(f"Refused: {exc}", url=url, reason="refused")
        except TRANSPORT_ERRORS as exc:
            return failure(f"Error fetching {url}: {describe_error(exc, self.config.timeout_s)}", url=url)
        if answer.status >= 400:
            return failure(
                f"Error fetching {url}: HTTP {answer.status} {answer.reason}".rstrip(), url=url, status=answer.status
            )
        try:
            title, text = await asyncio.to_thread(page_text, answer)  # big pages parse off the event loop
        except Refused as exc:
            return failure(f"Refused: {exc}", url=answer.url, reason="content_type")
        cut = self.config.max_bytes if answer.truncated else None
        text, truncated = render(title, answer.url, text, self.config.max_chars, cut)
        meta = {"url": answer.url, "source": "web", "status": answer.status, "bytes": len(answer.body),
                "truncated": truncated}  # fmt: skip
        return ToolResult(True, text, meta)

    async def from_corpus(self, url: str) -> Document | ToolResult | None:
        """The corpus document for corpus://<id> or a known URL; a failure when it cannot be."""
        local = url.startswith("corpus://")
        if self.corpus is None and local:
            return failure("Error: corpus:// pages need a local search corpus; none is configured", url=url)
        if self.corpus is None:
            return None
        try:
            document = await self.corpus.document(url)
        except SearchError as exc:
            return failure(f"Error: {exc}", url=url) if local else None
        if local and document is None:
            return failure(f"Error: no document {url} in the local corpus", url=url, reason="not_found")
        return document

    async def fetch_following_redirects(self, url: str) -> Fetched:
        config = self.config
        headers = {"User-Agent": config.user_agent, "Accept": "text/html, text/plain;q=0.9, */*;q=0.5"}
        async with session(config.timeout_s, not config.allow_private_addresses, headers) as client:
            # One time budget for all the hops, not one per hop.
            return await asyncio.wait_for(self.follow(client, url), config.timeout_s)

    async def follow(self, client, url: str) -> Fetched:
        for _ in range(self.config.max_redirects + 1):
            answer = await fetch(client, "GET", url, self.config.max_bytes)
            if answer.status not in (301, 302, 303, 307, 308) or not answer.location:
                return answer
            url = urljoin(answer.url, answer.location)
            check_url(url, self.config.allow_private_addresses)
        raise Refused(f"more than {self.config.max_redirects} redirects")


def build_crawl_page(config: CrawlToolConfig, context: BuildContext) -> CrawlPageTool:
    """With a summarizer client and `summarize` on, pages are summarised toward the agent's goal;
    with a local corpus, its documents are readable by id or URL, whichever backend searches."""
    summarize = config.summarize and context.summarizer is not None
    summarizer = PageSummarizer(context.summarizer, config.summary_chars) if summarize else None
    return CrawlPageTool(config, context.corpus, summarizer)


SPEC = ToolSpec(
    name="crawl_page", config=CrawlToolConfig, build=build_crawl_page, argument="the URL / corpus:// id to read", parameter="url",
    variants=("mas",), aliases=("visit_webpage", "browse", "fetch"), rl_domains=("qa",), order=20,
)  # fmt: skip
