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
from .tasks import Domain
from .tools.config import ToolsConfig

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
    ~800 tokens, a minute on two cores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # hashable: one reply model per setting

    think: int = Field(800, ge=40, le=20_000, description="every role's reasoning")
    code: int = Field(3000, ge=40, le=50_000, description="a code-tool program")
    answer: int = Field(4000, ge=10, le=50_000, description="the suggested answer")
    comment: int = Field(600, ge=20, le=10_000, description="a reflection's or double check's comment")


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
    max_steps: int = Field(6, ge=1, le=50, description="tool calls per task")
    max_replans: int = Field(2, ge=0, le=10, description="re-plans per task after a poor reflection or low double check")
    max_tokens_per_task: int = Field(60_000, ge=1000, description="prompt + completion tokens over all roles")
    checker: str | None = Field(None, description="correctness checker name (default: by the task's domain)")
    parallel_tasks: int = Field(8, ge=1, le=256, description="tasks run at the same time")
    history_chars: int = Field(6000, ge=500, description="how much of the run so far each role sees")
    reply_chars: ReplyLimits = Field(default_factory=ReplyLimits)
    mas_code: bool = Field(False, description="the mas variant's tool agent may also run code (when the code "
                           "tool is on); off: web_search and crawl_page only, as AFM's web agent")  # fmt: skip
