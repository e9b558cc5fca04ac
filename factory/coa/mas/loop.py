"""One task through the multi-agent system: plan, work the plan one step per tool call, answer and check.

    plan ─► (tool agent ─► tool ─► reflector)* per open step ─► answerer ─► verifier ─► answer
      ▲          a reflection asks for a new plan │                 score <= 2 │
      └──────────────────────────────────────────┴────────────────────────────┘

The plan is a list of steps with states (factory/coa/plan.py). The tool agent (the
search agent in the `mas` variant, the code agent in the `code` variant) is told which
step it works on and makes one call for it; the reflector judges that step: done,
retry (another call for the same step), drop (with its reason) or re-plan. The answer
waits until no step is open (or `max_steps` tool calls are spent). A code task's final
program is run on the question's public samples before it goes to the double check
(samples.py). The double check accepts (score >= 3) or sends the run back to the
planner, naming one more check to make or none. A re-plan past `max_replans`, an LLM
failure, the token budget or `task_timeout_s` ends the run early with its status; a
tool failure is only an observation. Every step is a trace event.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timezone

from ...store import utcnow
from ...tasks import Task
from ..config import CoaConfig
from ..defaults import resolve_coa
from ..plan import Plan, PlanStep
from ..samples import public_samples, test_steps, untested
from ..tools import Goal, ToolBox
from ..tools.registry import offered_for
from ..trace import Event, Trace
from .agents import Agents, RunState, Stop, usage_of

MAX_TEST_ROUNDS = 2  # times a code answer is sent back to be run on the samples before the check sees it anyway


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
            f"task timed out after {settings.task_timeout_s:g} s (coa.task_timeout_s); done by then: events "
            f"{len(run.trace.events)}, tool calls {run.steps}, re-plans {run.replans}"
        )
    run.trace.duration_s = run.elapsed()
    return run.trace


def offered_tools(variant: str, settings: CoaConfig, toolbox: ToolBox) -> tuple[str, ...]:
    """The tool agent's choices, among the tools that are on: those declared for the variant (registry.py),
    and the ones offered on request (code in `mas`) with `mas_code`."""
    return tuple(name for name in offered_for(variant, settings.mas_code) if name in toolbox)


async def solve(agents: Agents, toolbox: ToolBox, run: RunState, settings: CoaConfig) -> None:
    while True:
        step = run.plan.current()
        if step is not None and run.steps < settings.max_steps:
            if await act(agents, toolbox, run, step) == "replan":
                await replan(agents, run, settings, "a reflection asked for a new plan")
            continue
        suggested = await agents.ask(run, "answerer")
        if needs_sample_runs(run, suggested, settings):
            continue
        check = await agents.ask(run, "verifier")
        if check.decision == "accept":
            return accept(run, suggested)
        await replan(agents, run, settings, "the double check scored the suggested answer <= 2")


async def make_plan(agents: Agents, run: RunState, replan: bool) -> None:
    event = await agents.ask(run, "planner")
    event.replan = replan
    steps = [line.split(". ", 1)[-1] for line in (event.content or "").splitlines() if line.strip()]
    run.plan = Plan.from_steps(steps)
    run.trace.steps = run.plan.records()


async def replan(agents: Agents, run: RunState, settings: CoaConfig, why: str) -> None:
    if run.replans >= settings.max_replans:
        raise Stop("exhausted", f"{why}, and the re-plan budget ({settings.max_replans}) is spent")
    run.replans += 1
    await make_plan(agents, run, replan=True)


async def act(agents: Agents, toolbox: ToolBox, run: RunState, step: PlanStep) -> str:
    """One tool call for `step` and its reflection; returns the reflector's decision."""
    agent = "search_agent" if run.trace.variant == "mas" else "code_agent"
    event = await agents.ask(run, agent, focus=f"The plan step to work on now: step {step.number}: {step.text}")
    event.step = step.number
    started = time.monotonic()
    result = await toolbox.call(event.tool.name, event.tool.argument, goal_of(run.trace, event))
    event.tool = event.tool.model_copy(update={
        "ok": result.ok, "result": result.text, "meta": result.meta,
        "duration_s": round(time.monotonic() - started, 3),
        "llm": [usage_of(call, model) for model, call in result.llm],
    })  # fmt: skip
    event.duration_s = round(event.duration_s + event.tool.duration_s, 3)
    run.steps += 1
    step.calls.append(run.steps)
    reflection = await agents.ask(
        run, "reflector", focus=f"The plan step the call was for: step {step.number}: {step.text}"
    )
    reflection.step = step.number
    run.plan.settle(step, reflection.decision, reflection.content or "", reflection.settles)
    run.trace.steps = run.plan.records()
    return reflection.decision


def needs_sample_runs(run: RunState, suggested: Event, settings: CoaConfig) -> bool:
    """A code task's program not yet run on every public sample goes back to the plan as one more step
    (at most MAX_TEST_ROUNDS times, and while tool calls are left)."""
    if run.trace.domain != "code" or run.trace.variant != "code" or run.tests_asked >= MAX_TEST_ROUNDS:
        return False
    samples = public_samples(run.trace.question)
    missing = untested(run.trace, suggested.content or "", samples)
    if not missing or run.steps >= settings.max_steps:
        return False
    run.tests_asked += 1
    for step in test_steps(missing):
        run.plan.add(step)
    run.trace.steps = run.plan.records()
    return True


def goal_of(trace: Trace, event: Event) -> Goal:
    """What the call is for, from what the distilled trajectory shows before it: the question, the
    web_search query and the reasoning for this call (AFM's crawl_page summarises toward these). The query
    is the latest one whose results list a page the call reads, else the latest one."""
    searches = [call for call in trace.tool_calls() if call.name == "web_search" and call is not event.tool]
    links = [link.strip() for link in event.tool.argument.split("|") if link.strip()]
    found = [call for call in searches if any(link in call.result for link in links)]
    query = (found or searches)[-1].argument if searches else ""
    return Goal(question=trace.question, query=query, clues=event.think or "")


def accept(run: RunState, suggested: Event) -> None:
    run.trace.final_answer = suggested.content
    run.trace.events.append(
        Event(agent="answerer", kind="answer", content=suggested.content, decision="accept", started_s=run.elapsed())
    )
