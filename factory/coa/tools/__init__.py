"""factory.coa.tools — the tools a Chain-of-Agents run calls; each answer becomes an <observation>.

    ToolBox.from_config(ToolsConfig) -> ToolBox       name -> Tool mapping
    await toolbox.call(name, argument) -> ToolResult  ok / text / meta; never raises

Tools (AFM tag names):
- code        a Python snippet in factory.sandbox; printed output, or "Error: line N: ...",
              "Rejected: ...", "Timed out after 10 s" (code.py)
- web_search  BM25 over a local JSONL/parquet corpus (bm25.py, DuckDB, no network) or
              any JSON search API described by config (http_search.py)
- crawl_page  an http(s) page as text, or corpus://<id> from the local corpus (crawl.py)

Every tool is bounded (time, bytes, characters) and turns its failures into an
observation with ok=False, so an agent sees what went wrong and can react.
"""

from .base import Tool, ToolResult
from .bm25 import CorpusError, CorpusIndex, Document, build_index, index_path
from .code import CodeTool
from .config import (
    CODE_TOOL_IMPORTS, CodeToolConfig, CrawlToolConfig, HttpSearchConfig, LocalCorpusConfig, SearchToolConfig,
    ToolsConfig,
)  # fmt: skip
from .crawl import CrawlPageTool
from .http_search import HttpSearchBackend
from .search import LocalSearchBackend, SearchError, SearchResult, WebSearchTool
from .toolbox import ToolBox

__all__ = [
    "CODE_TOOL_IMPORTS", "CodeTool", "CodeToolConfig", "CorpusError", "CorpusIndex", "CrawlPageTool",
    "CrawlToolConfig", "Document", "HttpSearchBackend", "HttpSearchConfig", "LocalCorpusConfig",
    "LocalSearchBackend", "SearchError", "SearchResult", "SearchToolConfig", "Tool", "ToolBox", "ToolResult",
    "ToolsConfig", "WebSearchTool", "build_index", "index_path",
]  # fmt: skip
