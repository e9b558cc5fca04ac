"""One task through the multi-agent system: plan, act and reflect, answer and check, re-plan.

    plan ─► (tool agent ─► tool ─► reflector)* ─► answerer ─► verifier ─► answer
      ▲          any "poor" rating │                   score <= 2 │
      └────────────────────────────┴──────────────────────────────┘

The tool agent is the search agent in the `mas` variant (web_search and
crawl_page, and code only with `coa.mas_code`) and the code agent in the
`code` variant; every prompt names exactly the tools offered, which the trace
records. A tool's answer is cut once, by the toolbox, into the observation
that the agents read and the trace keeps. The reflector decides when there is enough to answer; at
`max_steps` tool calls the answerer is asked anyway. A re-plan past
`max_replans`, an LLM failure, the token budget or `task_timeout_s` ends the run early with its
status; a tool failure is only an observation. Every step is a trace event.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timezone

from ...store import utcnow
from ...tasks import Task
from ..config import CoaConfig
from ..defaults import resolve_coa
from ..tools import Goal, ToolBox
from ..trace import Event, Trace
from .agents import Agents, RunState, Stop, usage_of

WEB_TOOLS = ("web_search", "crawl_page")


def choose_variant(setting: str, domain: str) -> str:
    if setting != "auto":
        return setting
    return "mas" if domain == "qa" else "code"


def new_trace(task: Task, variant: str, agents: Agents, tools: tuple[str, ...]) -> Trace:
    return Trace(
        trace_id=f"coa:{task.id}", task_id=task.id, variant=variant, domain=task.domain, question=task.question,
        agents=dict(agents.models), tools=list(tools), started_at=utcnow().replace(tzinfo=timezone.utc).isoformat(),
    )  # fmt: skip


async def run_mas(agents: Agents, toolbox: ToolBox, task: Task, settings: CoaConfig) -> Trace:
    """The trace of one run; LLM and tool failures end up in it, never raised. Settings left
    auto take the full-model values here (batch.py resolves them by the run's model first)."""
    settings = resolve_coa(settings)
    variant = choose_variant(settings.variant, task.domain)
    tools = offered_tools(variant, settings, toolbox)
    run = RunState(new_trace(task, variant, agents, tools), settings.max_tokens_per_task, settings.history_chars,
                   settings.reply_chars, tools, toolbox.allowed_modules())  # fmt: skip
    try:
        async with asyncio.timeout(settings.task_timeout_s):
            await make_plan(agents, run, replan=False)
            await solve(agents, toolbox, run, settings)
    except Stop as stop:
        run.trace.status, run.trace.reason = stop.status, stop.reason
    except TimeoutError:  # the call or tool in flight is cancelled; the finished calls stay cached
        run.trace.status = "timeout"
        run.trace.reason = (
            f"ran past coa.task_timeout_s ({settings.task_timeout_s:g} s); done by then: events "
            f"{len(run.trace.events)}, tool calls {run.steps}, re-plans {run.replans}"
        )
    run.trace.duration_s = run.elapsed()
    return run.trace


def offered_tools(variant: str, settings: CoaConfig, toolbox: ToolBox) -> tuple[str, ...]:
    """The tool agent's choices, among the tools that are on: the web tools (and code with
    `mas_code`) for `mas`, code for `code`."""
    wanted = (*WEB_TOOLS, *(("code",) if settings.mas_code else ())) if variant == "mas" else ("code",)
    return tuple(name for name in wanted if name in toolbox)


async def solve(agents: Agents, toolbox: ToolBox, run: RunState, settings: CoaConfig) -> None:
    while True:
        if run.steps < settings.max_steps:
            decision = await act(agents, toolbox, run)
            if decision == "replan":
                await replan(agents, run, settings, "a reflection rated the work poor")
                continue
            if decision == "continue":
                continue
        if await answer(agents, run):
            return
        await replan(agents, run, settings, "the double check scored the suggested answer <= 2")


async def make_plan(agents: Agents, run: RunState, replan: bool) -> None:
    event = await agents.ask(run, "planner")
    event.replan = replan
    run.plan = event.content or ""


async def replan(agents: Agents, run: RunState, settings: CoaConfig, why: str) -> None:
    if run.replans >= settings.max_replans:
        raise Stop("exhausted", f"{why}, and the re-plan budget ({settings.max_replans}) is spent")
    run.replans += 1
    await make_plan(agents, run, replan=True)


async def act(agents: Agents, toolbox: ToolBox, run: RunState) -> str:
    """One tool call and its reflection; returns the reflector's decision."""
    agent = "search_agent" if run.trace.variant == "mas" else "code_agent"
    event = await agents.ask(run, agent)
    started = time.monotonic()
    result = await toolbox.call(event.tool.name, event.tool.argument, goal_of(run.trace, event))
    event.tool = event.tool.model_copy(update={
        "ok": result.ok, "result": result.text, "meta": result.meta,
        "duration_s": round(time.monotonic() - started, 3),
        "llm": [usage_of(call, model) for model, call in result.llm],
    })  # fmt: skip
    event.duration_s = round(event.duration_s + event.tool.duration_s, 3)
    run.steps += 1
    reflection = await agents.ask(run, "reflector")
    return reflection.decision


def goal_of(trace: Trace, event: Event) -> Goal:
    """What the call is for, from what the distilled trajectory shows before it: the question, the
    last web_search query and the reasoning for this call (AFM's crawl_page summarises toward these)."""
    queries = [call.argument for call in trace.tool_calls() if call.name == "web_search" and call is not event.tool]
    return Goal(question=trace.question, query=queries[-1] if queries else "", clues=event.think or "")


async def answer(agents: Agents, run: RunState) -> bool:
    """Suggest an answer and check it; True when the check accepts it (score >= 3)."""
    suggested = await agents.ask(run, "answerer")
    check = await agents.ask(run, "verifier")
    if check.decision != "accept":
        return False
    run.trace.final_answer = suggested.content
    run.trace.events.append(
        Event(agent="answerer", kind="answer", content=suggested.content, decision="accept", started_s=run.elapsed())
    )
    return True
