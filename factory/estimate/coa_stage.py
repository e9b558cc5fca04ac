"""The coa stage's estimate. Each task's first request, the planner's, is rendered with coa/roles.py for that task
(its tools, modules and answer format); every other role's request is rendered for the task too, with no plan and
no history, plus the history its later calls read (half of `coa.history_chars` expected, all of it at most).

Calls per task: planner 1 + max_replans, the tool agent and the reflector max_steps each, the answerer and the
verifier 1 + max_replans at most (mas/loop.py); expected: the store's own mean per finished task, else one plan,
min(2, max_steps) tool calls each with its reflection, one answer and its check.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..coa.batch import check_tools, choose_tasks
from ..coa.defaults import coa_llm, resolve_coa
from ..coa.mas import choose_variant, offered_tools
from ..coa.mas.agents import role_configs
from ..coa.roles import ROLE_TYPES
from ..coa.tools import ToolBox
from ..prompts import prompts_from
from .context import EstimateContext
from .history import query
from .model import Part, Span, StageEstimate

if TYPE_CHECKING:
    from ..coa.config import CoaConfig
    from ..run_config import FactoryConfig
    from ..tasks import Task

STEPS = ("planner", "tool_agent", "reflector", "answerer", "verifier")  # the loop's kinds of call
DEFAULT_TOOL_CALLS = 2


def coa_estimate(ctx: EstimateContext, config: FactoryConfig) -> StageEstimate:
    settings = resolve_coa(config.coa, config.llm)
    llm = coa_llm(config.llm, settings)
    configs = role_configs(llm, settings.models)
    done = {r[0] for r in query(ctx.store, "SELECT trajectory_id FROM trajectories WHERE source IN ('coa', 'import') "
                                "AND rule IS DISTINCT FROM 'timeout'")}  # fmt: skip
    tasks = choose_tasks(settings)
    check_tools(tasks, settings)  # a run that would stop before any call says so here too
    todo = [t for t in tasks if f"coa:{t.id}" not in done]
    expected, most = _calls_per_task(ctx, settings, len(done))
    sizes = _prompt_sizes(ctx, config, settings, configs, todo)
    parts = []
    for role, (tasks, first, base, history) in sizes.items():
        step = "tool_agent" if role in ("search_agent", "code_agent") else role
        cached = tasks - first.count if role == "planner" else 0  # a planner's first call answered in the log
        calls = Span(expected[step] * tasks - cached, most[step] * tasks)
        each = (base + history / 2) / max(tasks, 1)  # a later call's prompt: the role's own, half the history
        rendered = first.count if role == "planner" else 0  # the first plans, counted as they are
        prompts = Span(
            (first.tokens if rendered else 0) + max(calls.expected - rendered, 0) * each,
            calls.most * (base + history) / max(tasks, 1),
        )
        per_call, source = ctx.completion(configs[role].model, f"coa_{role}", "coa", llm.max_tokens)
        completion = Span(calls.expected * per_call, calls.most * llm.max_tokens)
        parts.append(Part(role.replace("_", " "), calls, prompts, completion, ctx.pricing(configs[role])))
    cached = len(todo) - sizes["planner"][1].count if todo else 0
    notes = [
        f"{len(todo)} tasks to do ({len(done)} finished before); max_steps {settings.max_steps}, max_replans "
        f"{settings.max_replans}; a task stops at max_tokens_per_task {settings.max_tokens_per_task}",
        f"calls per task: expected {sum(expected.values()):g} ({'the store' if len(done) else 'default'}), "
        f"at most {sum(most.values())}; completion tokens: expected {per_call:.0f} per call ({source}), "
        f"most: max_tokens {llm.max_tokens}",
        "crawl_page may add one summarizer call per page read (not counted)",
        *([f"{cached} planner requests already answered in the call log (not counted)"] if cached else []),
    ]
    counter = ctx.counter(llm.model)
    return StageEstimate("coa", llm.model, len(todo), "task", len(done), counter.method, ctx.pricing(llm), parts, notes)


class FirstRound:
    """The planner's first requests that would be sent (not answered in the call log) and their prompt tokens."""

    def __init__(self) -> None:
        self.count, self.tokens = 0, 0


def _prompt_sizes(
    ctx: EstimateContext, config: FactoryConfig, settings: CoaConfig, configs: dict, tasks: list[Task]
) -> dict[str, tuple[int, FirstRound, float, float]]:
    """role -> (tasks it serves, the planner's first round, its prompt tokens with no history summed over those
    tasks, the tokens of a full history summed over them)."""
    served, base, history, first = Counter(), Counter(), Counter(), FirstRound()
    toolbox = ToolBox.from_config(settings.tools)  # no tool is called; the prompts name the tools that are on
    try:
        with prompts_from(config):
            for task in tasks:
                variant = choose_variant(settings.variant, task.domain)
                tools, modules = offered_tools(variant, settings, toolbox), toolbox.allowed_modules()
                for role in ("planner", "search_agent" if variant == "mas" else "code_agent", *STEPS[2:]):
                    request = ROLE_TYPES[role](settings.reply_chars, tools, modules).request(
                        task.question, "", "", task.domain or "qa", f"coa:{task.id}"
                    )
                    counter = ctx.counter(configs[role].model)
                    tokens = counter.count(request.messages)
                    if role == "planner" and not ctx.answered(configs[role], request):
                        first.count, first.tokens = first.count + 1, first.tokens + tokens
                    served[role] += 1
                    base[role] += tokens
                    history[role] += counter.per_char(request.messages[-1]["content"]) * settings.history_chars
    finally:
        toolbox.close()
    return {role: (served[role], first, base[role], history[role]) for role in served} or {
        "planner": (0, first, 0.0, 0.0)
    }


def _calls_per_task(ctx: EstimateContext, settings: CoaConfig, finished: int) -> tuple[dict, dict]:
    steps, replans = settings.max_steps, settings.max_replans
    most = {"planner": 1 + replans, "tool_agent": steps, "reflector": steps, "answerer": 1 + replans,
            "verifier": 1 + replans}  # fmt: skip
    rows = query(ctx.store, "SELECT stage, count(*) FROM llm_calls WHERE stage LIKE 'coa_%' GROUP BY stage")
    if finished and rows:
        seen = Counter()
        for stage, count in rows:
            role = stage.removeprefix("coa_")
            seen["tool_agent" if role in ("search_agent", "code_agent") else role] += count
        return {step: min(seen[step] / finished, most[step]) for step in STEPS}, most
    taken = min(DEFAULT_TOOL_CALLS, steps)
    return {"planner": 1, "tool_agent": taken, "reflector": taken, "answerer": 1, "verifier": 1}, most
