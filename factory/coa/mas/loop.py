"""One task through the multi-agent system: plan, act and reflect, answer and check, re-plan.

    plan ─► (tool agent ─► tool ─► reflector)* ─► answerer ─► verifier ─► answer
      ▲          any "poor" rating │                   score <= 2 │
      └────────────────────────────┴──────────────────────────────┘

The tool agent is the search agent in the `mas` variant and the code agent in
the `code` variant. The reflector decides when there is enough to answer; at
`max_steps` tool calls the answerer is asked anyway. A re-plan past
`max_replans`, an LLM failure, or the token budget ends the run early with its
status; a tool failure is only an observation. Every step is a trace event.
"""

from __future__ import annotations

import time
from datetime import timezone

from ...store import utcnow
from ..config import CoaConfig
from ..tasks import Task
from ..tools import ToolBox
from ..trace import Event, Trace
from .agents import Agents, RunState, Stop


def choose_variant(setting: str, domain: str) -> str:
    if setting != "auto":
        return setting
    return "mas" if domain == "qa" else "code"


def new_trace(task: Task, variant: str, agents: Agents) -> Trace:
    return Trace(
        trace_id=f"coa:{task.id}", task_id=task.id, variant=variant, domain=task.domain, question=task.question,
        agents=dict(agents.models), started_at=utcnow().replace(tzinfo=timezone.utc).isoformat(),
    )  # fmt: skip


async def run_mas(agents: Agents, toolbox: ToolBox, task: Task, settings: CoaConfig) -> Trace:
    """The trace of one run; LLM and tool failures end up in it, never raised."""
    variant = choose_variant(settings.variant, task.domain)
    run = RunState(new_trace(task, variant, agents), settings.max_tokens_per_task, settings.history_chars,
                   settings.reply_chars, search_tools(settings, toolbox))  # fmt: skip
    try:
        await make_plan(agents, run, replan=False)
        await solve(agents, toolbox, run, settings)
    except Stop as stop:
        run.trace.status, run.trace.reason = stop.status, stop.reason
    run.trace.duration_s = run.elapsed()
    return run.trace


def search_tools(settings: CoaConfig, toolbox: ToolBox) -> tuple[str, ...]:
    """The mas tool agent's choices: the web tools, and code when it is on (AFM's web agent computes too)."""
    code = ("code",) if settings.mas_code and "code" in toolbox else ()
    return ("web_search", "crawl_page", *code)


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
    result = await toolbox.call(event.tool.name, event.tool.argument)
    event.tool = event.tool.model_copy(update={
        "ok": result.ok, "result": result.text, "meta": result.meta,
        "duration_s": round(time.monotonic() - started, 3),
    })  # fmt: skip
    event.duration_s = round(event.duration_s + event.tool.duration_s, 3)
    run.steps += 1
    reflection = await agents.ask(run, "reflector")
    return reflection.decision


async def answer(agents: Agents, run: RunState) -> bool:
    """Suggest an answer and check it; True when the check accepts it (score >= 3)."""
    suggested = await agents.ask(run, "answerer")
    check = await agents.ask(run, "verifier")
    if check.decision != "accept":
        return False
    run.trace.final_answer = suggested.content
    run.trace.events.append(Event(agent="answerer", kind="answer", content=suggested.content, decision="accept",
                                  started_s=run.elapsed()))  # fmt: skip
    return True
