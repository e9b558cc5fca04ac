"""crawl_page's summaries: one LLM call per page read, steered by the agent's goal, in AFM's layout.

AFM's crawl_page (AFM/tool_servers/web_server/v2/crawl_page_server_v2.py in
OPPO-PersonalAI/Agent_Foundation_Models) does not show the agent the page: a
summary model extracts what matches the last web_search query and the agent's
reasoning, and the observation is, per page,

    Page 1 [https://example.org/a] Summary:
    <summary>

joined by a blank line; a page it could not read is
"Page 2 [url]: [Page content not accessible: <why>]". The prompt is ours
(prompts/coa/crawl_summary.md); the reply is one bounded JSON string, so a
small model cannot ramble past `max_chars`. A failed call is the page's
observation ("[Error: ...]"), never an exception.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints, create_model

from ...llm import LLMClient, Request, Result
from ...prompts import render_prompt
from .base import Goal, ToolResult

NOTHING = "No relevant information"  # what the prompt asks for when the page has nothing on the goal


class PageSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: Annotated[str, StringConstraints(min_length=1, max_length=1200)]


@lru_cache(maxsize=None)
def summary_model(max_chars: int) -> type[PageSummary]:
    bounded = Annotated[str, StringConstraints(min_length=1, max_length=max_chars)]
    return create_model("PageSummary", __base__=PageSummary, summary=(bounded, ...))


def summary_request(page: str, goal: Goal, max_chars: int) -> Request:
    prompt = render_prompt("coa/crawl_summary", question=goal.question or "(not given)",
                           query=goal.query or "(none yet)", clues=goal.clues or "(none)", page=page)  # fmt: skip
    return Request([{"role": "user", "content": prompt}], summary_model(max_chars), stage="coa_crawl_summary")


class PageSummarizer:
    """Summarises pages read by crawl_page with `client` (the run's `summarizer` model)."""

    def __init__(self, client: LLMClient, max_chars: int = 1200):
        self.client = client
        self.model = client.config.model
        self.max_chars = max_chars

    async def summarize(self, reads: list[tuple[str, ToolResult]], goal: Goal) -> ToolResult:
        """`reads`: (url as the agent wrote it, what reading it gave) per page, in order."""
        pages = await asyncio.gather(
            *(self.page(number, url, read, goal) for number, (url, read) in enumerate(reads, 1))
        )
        calls = tuple((self.model, result) for _, result in pages if result is not None)
        summarised = [result is not None and result.ok for _, result in pages]
        meta = {"pages": [read.meta for _, read in reads], "summarised": summarised}
        return ToolResult(any(summarised), "\n\n".join(text for text, _ in pages), meta, calls)

    async def page(self, number: int, url: str, read: ToolResult, goal: Goal) -> tuple[str, Result | None]:
        """The page's part of the observation, and the LLM call that made it (None: nothing to summarise)."""
        if not read.ok:
            return f"Page {number} [{url}]: [Page content not accessible: {read.text}]", None
        result = await self.client.run(summary_request(read.text, goal, self.max_chars))
        if not result.ok:
            problem = f"[Error: the summary failed: {result.error_kind}: {result.error}]"
            return f"Page {number} [{url}] Summary:\n{problem}", result
        return f"Page {number} [{url}] Summary:\n{result.parsed.summary.strip()}", result
