"""`ToolsConfig`: which tools are on, their limits, and the web_search backend (one section per tool in registry.py).

Loadable from YAML like every config section (extra keys are errors). Example:

    web_search:
      enabled: true
      backend: http
      http:
        endpoint: https://api.search.brave.com/res/v1/web/search
        api_key_env: BRAVE_API_KEY
        api_key_header: X-Subscription-Token
        api_key_template: "{api_key}"
        params: {q: "{query}", count: "{k}"}
        results_path: web.results
        snippet_field: description
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, create_model, field_validator, model_validator

from ...config import StrictModel
from ...llm.config import check_base_url
from ...sandbox import CODE_TASK_IMPORTS

# The code tool's default is the code-task profile (factory.sandbox.CODE_TASK_IMPORTS):
# the standard library contest programs use, sys and io included, so an agent can run
# a stdin program as it will be judged. numpy and sympy work where installed. The
# Python layer contains no profile (sys is also one attribute away from datetime,
# collections, re, ...); the kernel layers do, so a run needs Landlock and seccomp and
# is refused (error/isolation) without them (factory/sandbox/containment.py).
CODE_TOOL_IMPORTS: tuple[str, ...] = CODE_TASK_IMPORTS  # the old name, kept for imports of it


class CodeToolConfig(StrictModel):
    enabled: bool = True
    wall_s: float = Field(10, gt=0, description="wall-clock limit of one snippet")
    cpu_s: float = Field(5, gt=0, description="CPU-time limit of one snippet")
    memory_mb: int = Field(512, ge=64, description="address-space limit of the snippet's process")
    max_output_chars: int = Field(
        3000,
        ge=200,
        description="the longest observation: a longer stdout or stderr is cut in the middle with "
        "AFM's marker, inside its [STDOUT]/[STDERR] lines",
    )
    allowed_imports: tuple[str, ...] = CODE_TASK_IMPORTS
    echo_last_expression: bool = Field(True, description="print the value of a final bare expression, notebook-style")


class LocalCorpusConfig(StrictModel):
    path: Path = Field(description="JSONL (.jsonl/.ndjson/.json) or parquet with id, title, text and optional url")
    index_dir: Path | None = Field(None, description="where the BM25 index lives; default: next to the corpus")
    k1: float = Field(1.2, ge=0)
    b: float = Field(0.75, ge=0, le=1)


class HttpSearchConfig(StrictModel):
    endpoint: str = Field(pattern=r"^https?://", description="the search API's URL")
    method: Literal["GET", "POST"] = "GET"
    # Templates: the strings "{query}", "{k}" and "{api_key}" are replaced in every
    # value; a value that is exactly "{k}" becomes the number itself.
    params: dict[str, str] = Field(default_factory=lambda: {"q": "{query}"}, description="query-string template")
    json_body: dict[str, Any] | None = Field(None, description="JSON body template (POST)")
    headers: dict[str, str] = Field(default_factory=dict)
    api_key_env: str | None = Field(None, description="environment variable that holds the API key")
    api_key_header: str | None = Field("Authorization", description="header that carries the key (None: not sent)")
    api_key_template: str = "Bearer {api_key}"
    # Where the results are in the response: dotted paths, numbers index lists ("data.0.items").
    results_path: str = "results"
    title_field: str = "title"
    url_field: str = "url"
    snippet_field: str = "snippet"
    date_field: str | None = Field(None, description="shown as 'Date published:' when a result has it (Serper: date)")
    source_field: str | None = Field(None, description="shown as 'Source:' when a result has it (Serper: source)")
    timeout_s: float = Field(10, gt=0, description="per attempt, the whole request and response")
    max_response_bytes: int = Field(2_000_000, ge=1024)
    max_retries: int = Field(2, ge=0, le=10, description="extra attempts after 429, 5xx or a transport error")
    backoff_s: float = Field(0.5, ge=0, description="first wait between attempts; doubles each time")
    backoff_max_s: float = Field(8, ge=0, description="longest wait, Retry-After included")

    @field_validator("endpoint")
    @classmethod
    def _endpoint_has_a_host(cls, value: str) -> str:
        return check_base_url(value.strip())


class SearchToolConfig(StrictModel):
    enabled: bool = False  # off by default: it needs a corpus or an API to search
    backend: Literal["local", "http"] = "local"
    top_k: int = Field(5, ge=1, le=50)
    snippet_chars: int = Field(300, ge=40, le=5000)
    local: LocalCorpusConfig | None = None
    http: HttpSearchConfig | None = None

    @model_validator(mode="after")
    def backend_is_configured(self) -> SearchToolConfig:
        if self.enabled and getattr(self, self.backend) is None:
            raise ValueError(f"backend '{self.backend}' is chosen but its section '{self.backend}' is missing")
        return self


class CrawlToolConfig(StrictModel):
    enabled: bool = True
    timeout_s: float = Field(15, gt=0, description="the whole fetch, redirects included")
    max_bytes: int = Field(2_000_000, ge=1024, description="bytes read from the response; the rest is dropped")
    max_chars: int = Field(8000, ge=200, description="cap on a page's text (what the summary model reads)")
    summarize: bool = Field(
        True,
        description="a goal-directed summary per page by the `summarizer` model (AFM's "
        "crawl_page); off: the page's text is the observation",
    )
    summary_chars: int = Field(1200, ge=100, le=20_000, description="the longest summary of one page")
    max_redirects: int = Field(5, ge=0, le=20)
    # An agent chooses the URL, so by default it may not reach this machine, the
    # local network or cloud metadata endpoints. Tests turn this on for 127.0.0.1.
    allow_private_addresses: bool = False
    user_agent: str = "factory-crawl/0.1 (+offline-capable research agent)"


class ToolsBase(StrictModel):
    """What every run's tools share; `ToolsConfig` adds one section per declared tool (registry.py)."""

    # The one cut between a tool's answer and the observation: the agents read this
    # text and the distilled trajectory shows the same text (ToolBox.call applies it).
    observation_chars: int = Field(3000, ge=200, le=100_000, description="the longest observation; longer "
                                   "tool answers are cut with a marker, once, before anyone reads them")  # fmt: skip

    @model_validator(mode="after")
    def outputs_fit_the_observation(self) -> ToolsBase:
        """A tool that cuts its own output inside a frame (the code tool's [STDOUT]/[STDERR]) keeps its cap
        within `observation_chars`: a later cut by the toolbox would take the frame's end off."""
        for name in type(self).model_fields:
            section = getattr(self, name)
            cap = getattr(section, "max_output_chars", None)
            if cap is not None and cap > self.observation_chars:
                setattr(self, name, section.model_copy(update={"max_output_chars": self.observation_chars}))
        return self


def tools_config_model() -> type[ToolsBase]:
    """`coa.tools`: observation_chars and one section per declared tool, named after it."""
    from .registry import specs  # the tool modules import this module's sections

    sections = {spec.name: (spec.config, Field(default_factory=spec.config)) for spec in specs()}
    return create_model("ToolsConfig", __base__=ToolsBase, __module__=__name__, **sections)
