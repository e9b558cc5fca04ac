"""The `crawl_page` tool: a URL (or corpus://<id>) in, the page's text out.

- corpus://<id>, and any URL that a document of the local corpus carries, is
  answered from the corpus: no network, and offline runs stay reproducible.
- Otherwise only http(s) is fetched (file://, ftp://, data: ... are refused),
  with redirects followed by hand so that every hop is checked again; the body
  is capped at `max_bytes` and the whole fetch at `timeout_s`.
- Unless `allow_private_addresses`, hosts that are (or resolve to) loopback,
  private, link-local or reserved addresses are refused: the agent picks the
  URL, and it should not reach this machine or a cloud metadata endpoint.
- HTML becomes text (html_text.py); text/* and JSON are shown as they are.
  The observation is "Title: ...\nURL: ...\n\n<text>", capped at `max_chars`.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urljoin, urlsplit

from .base import ToolResult, cap_text, failure, strip_fence
from .bm25 import Document
from .config import CrawlToolConfig
from .fetch import TRANSPORT_ERRORS, Fetched, describe_error, fetch, is_ip_literal, is_public_address, session
from .html_text import html_to_text
from .search import LocalSearchBackend, SearchError

HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"application/json", "application/xml", "application/javascript", ""}  # "": the server did not say


class Refused(Exception):
    """The URL may not be fetched; the message says why."""


def parse_target(argument: str) -> str:
    """The URL in the argument: its first word, without quotes or angle brackets."""
    words = strip_fence(argument).split()
    return words[0].strip("<>\"'`") if words else ""


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

    def __init__(self, config: CrawlToolConfig | None = None, corpus: LocalSearchBackend | None = None):
        self.config = config or CrawlToolConfig()
        self.corpus = corpus

    async def __call__(self, argument: str) -> ToolResult:
        url = parse_target(argument)
        if not url:
            return failure("Error: no URL given", reason="empty")
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
            return failure(f"Error fetching {url}: HTTP {answer.status} {answer.reason}".rstrip(), url=url,
                           status=answer.status)  # fmt: skip
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
