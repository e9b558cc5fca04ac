"""`ToolBox`: the tools of one Chain-of-Agents run, by name, built from `ToolsConfig`.

`await toolbox.call(name, argument)` is the one entry point for agents: an
unknown tool, a disabled tool or a bug inside a tool all come back as an
`ok=False` observation, never as an exception that would end the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .base import Tool, ToolResult, failure
from .code import CodeTool
from .config import ToolsConfig
from .crawl import CrawlPageTool
from .http_search import HttpSearchBackend
from .search import LocalSearchBackend, SearchBackend, WebSearchTool


class ToolBox(Mapping[str, Tool]):
    def __init__(self, tools: Mapping[str, Tool], corpus: LocalSearchBackend | None = None):
        self.tools = dict(tools)
        self.corpus = corpus  # held to close its index

    @classmethod
    def from_config(cls, config: ToolsConfig | None = None) -> ToolBox:
        config = config or ToolsConfig()
        search = config.web_search
        corpus = LocalSearchBackend(search.local, search.snippet_chars) if search.local is not None else None
        tools: list[Tool] = []
        if config.code.enabled:
            tools.append(CodeTool(config.code))
        if search.enabled:
            backend: SearchBackend = corpus if search.backend == "local" else HttpSearchBackend(search.http)
            tools.append(WebSearchTool(search, backend))
        if config.crawl_page.enabled:
            # With a local corpus, its documents are readable by id or URL, whichever backend searches.
            tools.append(CrawlPageTool(config.crawl_page, corpus))
        return cls({tool.name: tool for tool in tools}, corpus)

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    async def call(self, name: str, argument: str) -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return failure(f"Error: there is no tool '{name}' (available: {known})", reason="unknown_tool")
        try:
            return await tool(argument)
        except Exception as exc:  # a tool bug must not end the agent's run; the trace keeps the type
            return failure(f"Error: {name} failed: {type(exc).__name__}: {exc}", reason="tool_bug",
                           exception=type(exc).__name__)  # fmt: skip

    def close(self) -> None:
        if self.corpus is not None:
            self.corpus.close()
