"""The roles' LLM side: one client per distinct model, and `ask`, which turns one role's
call into one trace event (or a recorded error that ends the run).

    async with open_agents(config.llm, coa.models, store, run_id) as agents:
        trace = await run_mas(agents, toolbox, task, coa)
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from ...llm import LLMClient, LLMConfig, Result
from ...store import Store
from ..config import ROLES, ReplyLimits, RoleModels
from ..plan import Plan
from ..roles import ROLE_TYPES
from ..trace import Event, LLMUsage, Trace
from .history import history_text


class Stop(Exception):
    """Ends a run early; the trace keeps the status and the reason."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status, self.reason = status, reason


@dataclass
class RunState:
    """One task's run in progress: its trace and what it has spent of its budgets."""

    trace: Trace
    max_tokens: int
    history_chars: int
    limits: ReplyLimits = field(default_factory=ReplyLimits)
    tools: tuple[str, ...] = ()  # what the tool agent may call; every prompt names exactly these
    modules: tuple[str, ...] = ()  # what the code tool lets a program import (prompts name exactly these)
    started: float = field(default_factory=time.monotonic)
    steps: int = 0  # tool calls made
    replans: int = 0
    plan: Plan = field(default_factory=Plan)  # the current plan's steps and their states, shown to every role
    tests_asked: int = 0  # times the final program was sent back to be run on the public samples

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def tokens(self) -> int:
        return sum(self.trace.tokens())


class Agents:
    """role name -> (client, model string). Roles sharing a model share a client (and its cache)."""

    def __init__(self, clients: dict[str, LLMClient], models: dict[str, str]):
        self.clients = clients
        self.models = models

    async def ask(self, run: RunState, role_name: str, focus: str = "") -> Event:
        """One role's call as a trace event; `focus` names the plan step it is about."""
        if run.tokens() >= run.max_tokens:
            raise Stop("token_budget", f"{run.tokens()} tokens spent (limit {run.max_tokens}) before the {role_name}")
        role = ROLE_TYPES[role_name](run.limits, run.tools, run.modules)
        trace = run.trace
        history = history_text(trace.events, run.history_chars)
        request = role.request(trace.question, run.plan.text(), history, trace.domain or "qa", trace.trace_id, focus)
        started = run.elapsed()
        result = await self.clients[role_name].run(request)
        usage = usage_of(result, self.models[role_name])
        if not result.ok:
            error = Event(agent=role_name, kind="error", content=f"{result.error_kind}: {result.error}", llm=usage,
                          started_s=started, duration_s=round(run.elapsed() - started, 3))  # fmt: skip
            trace.events.append(error)
            raise Stop("llm_error", f"{role_name}: {result.error_kind}: {result.error}")
        event = role.parse(result.parsed, trace.domain or "qa")
        event.llm, event.started_s, event.duration_s = usage, started, round(run.elapsed() - started, 3)
        trace.events.append(event)
        return event


def usage_of(result: Result, model: str) -> LLMUsage:
    return LLMUsage(
        model=model, request_hash=result.request_hash, prompt_tokens=result.prompt_tokens or 0,
        completion_tokens=result.completion_tokens or 0, cost_usd=result.cost_usd, latency_s=result.latency_s,
        cached=result.cached, error_kind=result.error_kind, error=result.error,
    )  # fmt: skip


def role_configs(base: LLMConfig, models: RoleModels) -> dict[str, LLMConfig]:
    """Each role's LLM config: the run's, with the role's model where one is set (the run's `price` is
    `llm.model`'s, so another model is priced from litellm's map)."""
    return {
        role: base if getattr(models, role) in (None, base.model) else role_config(base, getattr(models, role))
        for role in ROLES
    }


def role_config(base: LLMConfig, model: str) -> LLMConfig:
    return base.model_copy(update={"model": model, "price": None})


@asynccontextmanager
async def open_agents(
    base: LLMConfig, models: RoleModels, store: Store | None = None, run_id: str | None = None
) -> AsyncIterator[Agents]:
    configs = role_configs(base, models)
    async with AsyncExitStack() as stack:
        by_model: dict[str, LLMClient] = {}
        for config in configs.values():
            if config.model not in by_model:
                by_model[config.model] = await stack.enter_async_context(LLMClient(config, store, run_id))
        clients = {role: by_model[config.model] for role, config in configs.items()}
        yield Agents(clients, {role: config.model for role, config in configs.items()})
