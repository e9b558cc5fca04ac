"""`CoaConfig`: the `coa:` section of the factory config (tasks, roles' models, tools, limits).

coa:
  tasks: ../shared/data/tasks/math500.parquet
  count: 20
  models: {verifier: gpt-4o-mini}    # the other roles use the run's llm.model
  tools: {web_search: {enabled: true, local: {path: corpus.jsonl}}}
  max_steps: 6
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..config import StrictModel
from ..tasks import Domain
from .defaults import reply_defaults
from .tools.toolbox import ToolsConfig

ROLES = ("planner", "search_agent", "code_agent", "reflector", "verifier", "answerer", "summarizer")


class RoleModels(StrictModel):
    """A model string per role; None: the run's `llm.model`. Every other LLM setting
    (base_url, retries, temperature) is the run's, so an override must be reachable
    the same way (a litellm model string, or a model served at the same base_url)."""

    planner: str | None = None
    search_agent: str | None = None
    code_agent: str | None = None
    reflector: str | None = None
    verifier: str | None = None
    answerer: str | None = None
    summarizer: str | None = None  # crawl_page's page summaries (a tool's model, not an agent)


class ReplyLimits(StrictModel):
    """The longest text each role may write, in characters. Decoding is constrained to
    these bounds, and a small model tends to fill a string to its bound instead of
    closing it, so they also cap its time per call (SmolLM2: 3000 chars of code is
    ~800 tokens, a minute on two cores). None: auto (defaults.py), the first figure on
    the embedded model, the second on any other."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # hashable: one reply model per setting

    think: int | None = Field(None, ge=40, le=20_000, description="every role's reasoning (auto: 240 / 800)")
    code: int | None = Field(None, ge=40, le=50_000, description="a code-tool program (auto: 400 / 3000)")
    answer: int | None = Field(None, ge=10, le=50_000, description="the suggested answer (auto: 120 / 4000)")
    comment: int | None = Field(
        None, ge=20, le=10_000, description="a reflection's or double check's comment (auto: 160 / 600)"
    )
    plan_steps: int | None = Field(None, ge=1, le=12, description="steps a plan may list (auto: 3 / 12)")

    def resolved(self, embedded: bool) -> "ReplyLimits":
        """Every bound set: the auto ones for the embedded model or for any other."""
        return ReplyLimits(**{**reply_defaults(embedded), **self.model_dump(exclude_none=True)})


class CoaConfig(StrictModel):
    tasks: str | None = Field(None, description="JSONL/parquet task file or saved dataset (verl/AFM or plain QA rows)")
    domain: Domain | None = Field(None, description="keep only tasks of this domain (qa, math, code)")
    count: int = Field(4, ge=1, description="tasks to sample, one multi-agent run each")
    seed: int = 0
    variant: Literal["auto", "mas", "code"] = Field(
        "auto", description="mas: web agents; code: the code agent; auto: mas for qa, code for math and code tasks"
    )
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    models: RoleModels = Field(default_factory=RoleModels)
    # None: auto, resolved per run by whether llm.model is the embedded one (defaults.py, docs/coa_trace.md);
    # the figures read "embedded / any other". An explicit value always wins.
    max_steps: int | None = Field(None, ge=1, le=60, description="tool calls per task (auto: 2 / 20)")
    max_replans: int | None = Field(
        None, ge=0, le=10, description="re-plans per task after a poor reflection or low double check (auto: 1 / 3)"
    )
    max_tokens: int | None = Field(
        None, ge=1, description="completion tokens per coa call (auto: at most 512 / the run's llm.max_tokens)"
    )
    max_tokens_cap: int | None = Field(
        None,
        ge=1,
        description="ceiling when a cut-off coa reply is retried with more room "
        "(auto: at most 1024 / the run's llm.max_tokens_cap)",
    )
    task_timeout_s: float | None = Field(
        None,
        gt=0,
        description="wall-clock seconds one task may run; past it the task is cancelled and "
        "recorded as a `timeout` failure, retried by a rerun from its cached calls (auto: 600 / 900)",
    )
    max_tokens_per_task: int | None = Field(
        None, ge=1000, description="prompt + completion tokens over all roles (auto: 60000 / 400000)"
    )
    checker: str | None = Field(None, description="correctness checker name (default: by the task's domain)")
    parallel_tasks: int = Field(8, ge=1, le=256, description="tasks run at the same time")
    history_chars: int | None = Field(
        None, ge=500, description="how much of the run so far each role sees (auto: 6000 / 24000)"
    )
    reply_chars: ReplyLimits = Field(default_factory=ReplyLimits, description="bounds of each role's text")
    mas_code: bool = Field(
        False,
        description="the mas variant's tool agent may also run code (when the code "
        "tool is on); off: web_search and crawl_page only, as AFM's web agent",
    )
