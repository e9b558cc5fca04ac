"""The trace of one multi-agent run (or an imported agent log): the schema in docs/coa_trace.md.

A trace is an ordered list of events, each the work of one agent: a plan, a
tool call with its result, a reflection with its scores, a suggested answer, a
double check, the answer, or an error. Distillation (distill.py) reads only
this shape, so MAS runs and imported logs become trajectories the same way.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

EventKind = Literal["plan", "tool_call", "reflection", "suggested_answer", "double_check", "answer", "error"]
TraceStatus = Literal["answered", "exhausted", "token_budget", "llm_error", "internal_error", "timeout"]
SCHEMA_VERSION = 1


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMUsage(Record):
    """Which LLM call produced an event; the full messages live in `llm_calls` under request_hash."""

    model: str | None = None
    request_hash: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float | None = None
    cached: bool = False
    error_kind: str | None = None
    error: str | None = None


class ToolCall(Record):
    name: str  # web_search | crawl_page | code (or the imported tool's own name)
    argument: str
    ok: bool
    result: str  # the observation: what the agents read, and what the distillation shows
    duration_s: float | None = None
    meta: dict[str, Any] = Field(default_factory=dict)  # the tool's status, sizes, reasons
    llm: list[LLMUsage] = Field(default_factory=list)  # LLM calls the tool made (crawl_page's page summaries)


class Evidence(Record):
    """A fact a suggested answer rests on, and the tool call whose observation shows it (1-based)."""

    claim: str
    call: int | None = None


class Event(Record):
    agent: str  # planner, search_agent, code_agent, reflector, verifier, answerer, tool; imported: assistant
    kind: EventKind
    think: str | None = None  # the agent's reasoning for this step (becomes <think>)
    content: str | None = None  # plan steps, reflection comment, (suggested) answer, check comment, error text
    tool: ToolCall | None = None
    scores: dict[str, str | int] = Field(default_factory=dict)  # reflection ratings, or {"score": 1-4}
    # what the event led to: reflection done | retry | drop | replan; double check accept | check | replan
    decision: str | None = None
    replan: bool = False  # a plan made after a poor reflection or a low double check
    step: int | None = None  # tool call, reflection: the number of the plan step it works on
    settles: list[int] = Field(default_factory=list)  # reflection: other open plan steps its call's result settled
    evidence: list[Evidence] = Field(default_factory=list)  # suggested answer: the facts it rests on
    check: str | None = None  # double check: one more tool check it asked for before answering
    llm: LLMUsage | None = None
    messages: list[dict[str, Any]] | None = None  # imported logs keep their raw messages here
    started_s: float = 0.0  # offset from the trace's start
    duration_s: float = 0.0


class Trace(Record):
    schema_version: int = SCHEMA_VERSION
    trace_id: str
    task_id: str | None = None
    source: str = "mas"  # mas | import:openai | import:smolagents
    variant: Literal["mas", "code"]
    domain: str | None = None
    question: str
    agents: dict[str, str] = Field(default_factory=dict)  # role -> model string
    tools: list[str] = Field(default_factory=list)  # the tools the tool agent was offered (imports: none listed)
    events: list[Event] = Field(default_factory=list)
    steps: list[dict[str, Any]] = Field(default_factory=list)  # the last plan's steps: number, text, state, calls, note
    final_answer: str | None = None
    status: TraceStatus = "answered"
    reason: str | None = None  # why a run that is not `answered` ended
    started_at: str | None = None  # ISO time
    duration_s: float = 0.0

    def tool_calls(self) -> list[ToolCall]:
        return [event.tool for event in self.events if event.tool is not None]

    def offered_tools(self) -> list[str]:
        """The tools the run offered; a trace that lists none (imports, rows stored before the
        `tools` column) counts the tools its calls used."""
        return self.tools or sorted({call.name for call in self.tool_calls()})

    def usages(self) -> list[LLMUsage]:
        """Every LLM call of the run: the agents' and the tools' (page summaries)."""
        agents = [event.llm for event in self.events if event.llm is not None]
        return agents + [usage for call in self.tool_calls() for usage in call.llm]

    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens over every LLM call of the run."""
        usages = self.usages()
        return sum(u.prompt_tokens for u in usages), sum(u.completion_tokens for u in usages)

    def cost_usd(self) -> float | None:
        costs = [usage.cost_usd for usage in self.usages() if usage.cost_usd is not None]
        return sum(costs) if costs else None

    def llm_calls(self) -> int:
        return len(self.usages())

    def replans(self) -> int:
        return sum(1 for event in self.events if event.kind == "plan" and event.replan)
