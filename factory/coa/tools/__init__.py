"""factory.coa.tools — the tools a Chain-of-Agents run calls; each answer becomes an <observation>.

    ToolBox.from_config(ToolsConfig, summarizer_llm) -> ToolBox    name -> Tool mapping
    await toolbox.call(name, argument, goal) -> ToolResult         ok / text / meta; never raises

Tools (AFM tag names):
- code        a Python program in factory.sandbox (stdin from a ```sh block), answered in AFM's
              executor layout: "[EXECUTED]/[FAILED] Code exited with status N" with
              [STDOUT:BEGIN]…[STDOUT:END] / [STDERR:…] blocks, never empty (code.py)
- web_search  BM25 over a local JSONL/parquet corpus (bm25.py, DuckDB, no network) or
              any JSON search API described by config (http_search.py); AFM's result layout
- crawl_page  http(s) pages, or corpus://<id> from the local corpus (crawl.py), each
              summarised toward the agent's goal by an LLM (summary.py), as AFM's does

Every tool is bounded (time, bytes, characters) and turns its failures into an
observation with ok=False, so an agent sees what went wrong and can react. The
toolbox cuts every answer once to `observation_chars`: that text is the observation.
"""

from .base import Goal, Tool, ToolResult
from .bm25 import CorpusError, CorpusIndex, Document, build_index, index_path
from .code import CodeTool
from .config import (
    CODE_TOOL_IMPORTS,
    CodeToolConfig,
    CrawlToolConfig,
    HttpSearchConfig,
    LocalCorpusConfig,
    SearchToolConfig,
)
from .crawl import CrawlPageTool
from .http_search import HttpSearchBackend
from .registry import BuildContext, ToolSpec, spec, specs, tool_tags
from .search import LocalSearchBackend, SearchError, SearchResult, WebSearchTool
from .summary import PageSummarizer
from .toolbox import ToolBox, ToolsConfig

__all__ = [
    "CODE_TOOL_IMPORTS", "CodeTool", "CodeToolConfig", "CorpusError", "CorpusIndex", "CrawlPageTool",
    "CrawlToolConfig", "Document", "Goal", "HttpSearchBackend", "HttpSearchConfig", "LocalCorpusConfig",
    "LocalSearchBackend", "PageSummarizer", "SearchError", "SearchResult", "SearchToolConfig", "Tool", "ToolBox", "ToolResult",
    "ToolsConfig", "WebSearchTool", "build_index", "index_path", "BuildContext", "ToolSpec", "spec", "specs", "tool_tags",
]  # fmt: skip
