"""`ToolBox`: the tools of one Chain-of-Agents run, by name, built from `ToolsConfig`.

`await toolbox.call(name, argument, goal)` is the one entry point for agents:
an unknown tool, a disabled tool or a bug inside a tool all come back as an
`ok=False` observation, never as an exception that would end the run. It is
also where a tool's answer becomes the observation, cut once to
`observation_chars`: what the agents read and what the trace stores (and the
distillation shows) are the same text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from ...llm import LLMClient
from .base import Goal, Tool, ToolResult, cap_text, failure
from .config import tools_config_model
from .registry import BuildContext, specs
from .search import LocalSearchBackend

# `coa.tools`: one section per declared tool (registry.py), built here, where no tool module looks.
ToolsConfig = tools_config_model()


class ToolBox(Mapping[str, Tool]):
    def __init__(self, tools: Mapping[str, Tool], corpus: LocalSearchBackend | None = None,
                 observation_chars: int = ToolsConfig().observation_chars):  # fmt: skip
        self.tools = dict(tools)
        self.corpus = corpus  # held to close its index
        self.observation_chars = observation_chars

    @classmethod
    def from_config(cls, config: ToolsConfig | None = None, summarizer_llm: LLMClient | None = None) -> ToolBox:
        """Every declared tool that is on (registry.py). `summarizer_llm`: the client crawl_page summarises
        pages with (when `crawl_page.summarize`); without one, crawl_page shows the page's text."""
        config = config or ToolsConfig()
        search = config.web_search
        corpus = LocalSearchBackend(search.local, search.snippet_chars) if search.local is not None else None
        context = BuildContext(corpus, summarizer_llm, config)
        tools = [
            spec.build(getattr(config, spec.name), context) for spec in specs() if getattr(config, spec.name).enabled
        ]
        return cls({tool.name: tool for tool in tools}, corpus, config.observation_chars)

    def __getitem__(self, name: str) -> Tool:
        return self.tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def allowed_modules(self) -> tuple[str, ...]:
        """What a program run by the code tool may import, read off the tool itself, so that a prompt
        naming them can never drift from the sandbox's allowlist (empty when code is off)."""
        limits = getattr(self.tools.get("code"), "limits", None)
        return tuple(getattr(limits, "allowed_imports", ()))

    async def call(self, name: str, argument: str, goal: Goal | None = None) -> ToolResult:
        """The observation of one call: the tool's answer, cut once to `observation_chars`."""
        result = await self.answer(name, argument, goal)
        text, cut = cap_text(result.text, self.observation_chars)
        if not cut:
            return result
        return replace(result, text=text, meta={**result.meta, "cut_from_chars": len(result.text)})

    async def answer(self, name: str, argument: str, goal: Goal | None) -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return failure(f"Error: there is no tool '{name}' (available: {known})", reason="unknown_tool")
        try:
            if goal is not None and getattr(tool, "takes_goal", False):
                return await tool(argument, goal=goal)
            return await tool(argument)
        except Exception as exc:  # a tool bug must not end the agent's run; the trace keeps the type
            return failure(
                f"Error: {name} failed: {type(exc).__name__}: {exc}", reason="tool_bug", exception=type(exc).__name__
            )

    def close(self) -> None:
        if self.corpus is not None:
            self.corpus.close()
