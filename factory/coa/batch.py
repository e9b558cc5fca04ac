"""`factory coa`: sample tasks, run the multi-agent system on each, distil and store, resumably.

    outcome = run_coa(config)            # config: .run_dir, .llm, .coa (a FactoryConfig)
    outcome = run_coa_import(run_dir, "agent_logs.jsonl", variant="mas")

Per task: run the multi-agent system (mas/), store the trace, then either a
failure row (the run's status, the grammar rule the distillation broke, or
`team_talk` when an agent's text speaks of other agents, mas/voice.py) or the
distilled trajectory with its stats and correctness. A task with a row in `trajectories`
is finished: a rerun skips it without sending a request; a bug in one task is
recorded as an `internal_error` failure and the batch goes on.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from tqdm.auto import tqdm

from ..checks import Checker, default_checker, get_checker
from ..errors import ConfigError, FactoryError, SendingStopped
from ..llm.progress import CallCounter
from ..records import Trajectory
from ..run import Run, open_run
from ..sandbox import sandbox_refusal
from ..scale import ray_enabled, shard_subset
from ..store import Store
from ..tasks import Task, select_tasks
from .config import CoaConfig
from .defaults import auto_chosen, coa_llm, describe_auto, resolve_coa
from .distill import distill, distill_prompt
from .importers import load_agent_log
from .mas import Agents, choose_variant, offered_tools, open_agents, run_mas, team_talk
from .mas.voice import RULE as TEAM_TALK_RULE
from .stats import coa_stats
from .store import coa_funnel, failure_counts, finished_ids, save_distilled, save_failure, save_trace
from .tools import ToolBox
from .tools.registry import offered_for
from .trace import Trace


@dataclass
class CoaOutcome:
    run_id: str
    funnel: dict[str, int]
    failures: dict[str, int]  # rule or run status -> tasks lost to it


def choose_tasks(settings: CoaConfig) -> list[Task]:
    missing = "coa.tasks is not set (--tasks FILE): name a JSONL/parquet task file or a saved dataset"
    return select_tasks(settings.tasks, settings.domain, settings.count, settings.seed, missing)


def checker_for(task: Task, settings: CoaConfig, agents: Agents) -> Checker:
    if settings.checker == "llm_judge":
        return get_checker("llm_judge", llm=agents.clients["verifier"])
    return get_checker(settings.checker) if settings.checker else default_checker(task)


async def record_trace(store: Store, trace: Trace, task: Task | None, checker: Checker | None) -> bool:
    """Store the trace and what became of it; True when a valid trajectory was stored."""
    save_trace(store, trace)
    if trace.status != "answered":
        save_failure(store, trace, trace.status, trace.reason or trace.status, coa_stats(trace))
        return False
    distilled = distill(trace, distill_prompt(trace, task))
    if not distilled.ok:
        reason = f"grammar {distilled.rule}: {distilled.message}"
        save_failure(store, trace, distilled.rule, reason, coa_stats(trace))
        return False
    talk = team_talk(trace)
    if talk is not None:  # one agent's trajectory must not speak of others
        save_failure(store, trace, TEAM_TALK_RULE, f"voice {TEAM_TALK_RULE}: {talk}", coa_stats(trace))
        return False
    check = await checker.acheck(trace.final_answer or "", task) if checker and task else None
    stats = coa_stats(trace, check.correct if check else None)
    trajectory = Trajectory(
        id=trace.trace_id, source="coa" if trace.source == "mas" else "import", task_id=trace.task_id,
        turns=distilled.turns, final_answer=trace.final_answer, correct=stats.correct,
        provenance={"agents": trace.agents, "variant": trace.variant, "trace_source": trace.source},
    )  # fmt: skip
    single = {
        "prompt": distilled.single.prompt,
        "completion": distilled.single.completion,
        "observation_spans": [list(span) for span in distilled.single.observation_spans],
    }
    save_distilled(store, trace, trajectory, single, stats, check.detail if check else None)
    return True


def failed_trace(task: Task, settings: CoaConfig, trace: Trace | None, exc: Exception) -> Trace:
    """The trace of a task whose run hit a bug: what it had, marked internal_error."""
    if trace is None:
        trace = Trace(trace_id=f"coa:{task.id}", task_id=task.id, variant=choose_variant(settings.variant, task.domain),
                      domain=task.domain, question=task.question)  # fmt: skip
    return trace.model_copy(update={"status": "internal_error", "reason": f"{type(exc).__name__}: {exc}"})


async def coa_one(agents: Agents, toolbox: ToolBox, store: Store, task: Task, settings: CoaConfig) -> None:
    trace = None
    try:
        trace = await run_mas(agents, toolbox, task, settings)
        await record_trace(store, trace, task, checker_for(task, settings, agents))
    except SendingStopped:
        raise  # the store cannot be written: the batch stops (recording this task would fail too)
    except Exception as exc:  # one task's bug must not end the batch: record it
        broken = failed_trace(task, settings, trace, exc)
        save_trace(store, broken)
        save_failure(store, broken, "internal_error", broken.reason)


def check_tools(tasks: list[Task], settings: CoaConfig) -> None:
    """Every task's tool agent gets at least one tool; else one line naming the settings to change."""
    toolbox = ToolBox.from_config(settings.tools)
    try:
        for variant in sorted({choose_variant(settings.variant, task.domain) for task in tasks}):
            offered = offered_tools(variant, settings, toolbox)
            if not offered:
                needs = " or ".join(f"tools.{name}" for name in offered_for(variant, settings.mas_code))
                raise FactoryError(f"coa: the {variant} variant has no tool to call: turn on {needs}")
            refused = sandbox_refusal() if "code" in offered else None
            if refused:  # every code call would fail and every code task go unjudged: say so before any LLM call
                raise FactoryError(f"coa: the code tool cannot run here: {refused}")
    finally:
        toolbox.close()


def resolved_config(config: Any) -> tuple[Any, CoaConfig]:
    """The config with its coa auto fields set by the run's model (what the run records), and
    those settings; one line on stderr names what auto chose for the embedded model."""
    settings = resolve_coa(config.coa, config.llm)
    note = describe_auto(auto_chosen(config.coa, settings), config.llm)
    if note:
        print(note, file=sys.stderr)
    resolved = config.model_copy(update={"coa": settings}) if isinstance(config, BaseModel) else config
    return resolved, settings


def refuse_batch_mode(llm: Any) -> None:
    """Each agent turn waits on the one before: in batch mode every turn would wait a batch round (up to 24 h)."""
    if llm.batch.enabled:
        raise ConfigError(
            "coa: batch mode (--batch) is for single-shot stages (refine, passrate, persona expansion, judges); a "
            "multi-agent run's turns depend on each other and would wait a batch round each: drop --batch"
        )


async def run_coa_async(config: Any, progress: bool = True) -> CoaOutcome:
    refuse_batch_mode(config.llm)
    tasks = shard_subset(choose_tasks(config.coa), config)  # a Ray shard runs its slice (factory/scale/)
    check_tools(tasks, config.coa)
    config, settings = resolved_config(config)
    with open_run(config.run_dir, "coa", config if isinstance(config, BaseModel) else None) as run:
        done = finished_ids(run.store)
        todo = [task for task in tasks if f"coa:{task.id}" not in done]
        gate = asyncio.Semaphore(settings.parallel_tasks)

        async with open_agents(coa_llm(config.llm, settings), settings.models, run.store, run.run_id) as agents:
            # crawl_page summarises pages with the `summarizer` model, through the run's clients.
            toolbox = ToolBox.from_config(settings.tools, agents.clients["summarizer"])

            async def one(task: Task) -> None:
                async with gate:
                    await coa_one(agents, toolbox, run.store, task, settings)

            try:
                jobs = [asyncio.ensure_future(one(task)) for task in todo]
                bar = tqdm(total=len(jobs), desc="coa", unit="task", disable=not progress)
                with bar, CallCounter(set(agents.clients.values()), bar):
                    for finished in asyncio.as_completed(jobs):
                        await finished
                        bar.update(1)
            finally:
                toolbox.close()
        return CoaOutcome(run.run_id, coa_funnel(run.store), failure_counts(run.store))


def run_coa(config: Any, progress: bool = True) -> CoaOutcome:
    if ray_enabled(config):
        return run_coa_on_ray(config, progress)
    return asyncio.run(run_coa_async(config, progress))


def coa_shard(config: Any) -> dict[str, int]:
    """One shard's work, in its Ray worker (the funnel is read again from the merged store)."""
    return run_coa(config, progress=False).funnel


def run_coa_on_ray(config: Any, progress: bool) -> CoaOutcome:
    """The tasks sharded by id over Ray workers; the outcome read from the merged store."""
    from ..scale.sharded import run_on_ray

    check_tools(choose_tasks(config.coa), config.coa)  # here, before any worker starts

    def finish(config: Any, run: Run, results: list[dict]) -> CoaOutcome:
        return CoaOutcome(run.run_id, coa_funnel(run.store), failure_counts(run.store))

    return run_on_ray(config, "coa", "task id", coa_shard, (), finish, progress)


def run_coa_import(run_dir: str | Path, path: str | Path, variant: str = "mas", fmt: str = "auto",
                   tool_names: dict[str, str] | None = None, progress: bool = True) -> CoaOutcome:  # fmt: skip
    """Distil agent logs you already have (OpenAI tool-calling or smolagents memory, see importers.py).
    Imported traces have no reference answers here: correctness stays unknown (None)."""
    traces = load_agent_log(path, variant, fmt, tool_names)
    with open_run(run_dir, "coa-import") as run:
        done = finished_ids(run.store)
        for trace in tqdm([t for t in traces if t.trace_id not in done], desc="import", disable=not progress):
            asyncio.run(record_trace(run.store, trace, None, None))
        return CoaOutcome(run.run_id, coa_funnel(run.store, "import"), failure_counts(run.store, "import"))
