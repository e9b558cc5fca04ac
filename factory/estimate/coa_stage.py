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

from ..coa.batch import choose_tasks
from ..coa.defaults import coa_llm, resolve_coa
from ..coa.mas import choose_variant, offered_tools
from ..coa.mas.agents import role_configs
from ..coa.roles import ROLE_TYPES
from ..coa.tools import ToolBox
from ..prompts import prompts_from
from .context import EstimateContext
from .history import query
from .model import Part, Span, StageEstimate
from .pricing import pricing_for

if TYPE_CHECKING:
    from ..run_config import FactoryConfig

ROLES = ("planner", "tool_agent", "reflector", "answerer", "verifier")
DEFAULT_STEPS = 2


def coa_estimate(ctx: EstimateContext, config: FactoryConfig) -> StageEstimate:
    settings = resolve_coa(config.coa, config.llm)
    llm = coa_llm(config.llm, settings)
    configs = role_configs(llm, settings.models)
    tasks = choose_tasks(settings)
    done = {r[0] for r in query(ctx.store, "SELECT trajectory_id FROM trajectories WHERE source IN ('coa', 'import') "
                                "AND rule IS DISTINCT FROM 'timeout'")}  # fmt: skip
    todo = [t for t in tasks if f"coa:{t.id}" not in done]
    expected, most = _calls_per_task(ctx, settings, len(done))
    prompt_first, prompt_later, prompt_most, fresh = Counter(), Counter(), Counter(), 0
    toolbox = ToolBox.from_config(settings.tools)
    try:
        with prompts_from(config):
            for task in todo:
                variant = choose_variant(settings.variant, task.domain)
                tools, modules = offered_tools(variant, settings, toolbox), toolbox.allowed_modules()
                for role in ROLES:
                    name = role if role != "tool_agent" else ("search_agent" if variant == "mas" else "code_agent")
                    request = ROLE_TYPES[name](settings.reply_chars, tools, modules).request(
                        task.question, "", "", task.domain or "qa", f"coa:{task.id}"
                    )
                    counter = ctx.counter(configs[name].model)
                    tokens = counter.count(request.messages)
                    history = counter.per_char(request.messages[-1]["content"]) * settings.history_chars
                    if role == "planner" and not ctx.answered(configs[name], request):
                        prompt_first[role] += tokens
                        fresh += 1
                    prompt_later[role] += tokens + history / 2
                    prompt_most[role] += tokens + history
    finally:
        toolbox.close()
    parts = []
    n = len(todo)
    for role in ROLES:
        name = "search_agent" if role == "tool_agent" else role
        calls = Span(expected[role] * n, most[role] * n)
        later = calls.expected - (fresh if role == "planner" else 0)
        each = prompt_later[role] / max(n, 1)
        prompts = Span(prompt_first[role] + max(later, 0) * each if role == "planner" else calls.expected * each,
                       calls.most * prompt_most[role] / max(n, 1))  # fmt: skip
        per_call, source = ctx.completion(configs[name].model, _stage_like(role), "coa", llm.max_tokens)
        completion = Span(calls.expected * per_call, calls.most * llm.max_tokens)
        parts.append(Part(role.replace("_", " "), calls, prompts, completion, pricing_for(configs[name])))
    notes = [
        f"{n} tasks to do ({len(done)} finished before); max_steps {settings.max_steps}, max_replans "
        f"{settings.max_replans}, max_tokens {llm.max_tokens} per call, max_tokens_per_task "
        f"{settings.max_tokens_per_task} (a task stops at it)",
        f"completion tokens: expected {per_call:.0f} per call ({source}); most: max_tokens {llm.max_tokens}",
        "crawl_page may add one summarizer call per page read (not counted)",
    ]
    if n - fresh:
        notes.append(f"{n - fresh} planner requests already answered in the call log (not counted)")
    counter = ctx.counter(llm.model)
    return StageEstimate("coa", llm.model, n, "task", len(done), counter.method, pricing_for(llm), parts, notes)


def _calls_per_task(ctx: EstimateContext, settings, finished: int) -> tuple[dict, dict]:
    steps, replans = settings.max_steps, settings.max_replans
    most = {"planner": 1 + replans, "tool_agent": steps, "reflector": steps, "answerer": 1 + replans,
            "verifier": 1 + replans}  # fmt: skip
    rows = query(ctx.store, "SELECT stage, count(*) FROM llm_calls WHERE stage LIKE 'coa_%' GROUP BY stage")
    if finished and rows:
        seen = Counter()
        for stage, count in rows:
            role = stage.removeprefix("coa_")
            seen["tool_agent" if role in ("search_agent", "code_agent") else role] += count
        return {role: min(seen[role] / finished, most[role]) for role in ROLES}, most
    taken = min(DEFAULT_STEPS, steps)
    return {"planner": 1, "tool_agent": taken, "reflector": taken, "answerer": 1, "verifier": 1}, most


def _stage_like(role: str) -> str:
    """The call log's stage names of a role (coa_search_agent and coa_code_agent are the tool agent)."""
    return "coa_%_agent" if role == "tool_agent" else f"coa_{role}"
