"""The pass-rate stage's estimate: exact, one request per (task, sample) not yet scored nor answered in the cache,
each rendered with the stage's own request builder (passrate.prompting.Policy)."""

from __future__ import annotations

import duckdb

from ..errors import FactoryError
from ..llm import LLMConfig
from ..passrate.config import PassrateConfig
from ..passrate.job import choose_tasks
from ..passrate.prompting import STAGE, Policy
from ..passrate.rows import StoredSlots, stored_slots
from ..passrate.sampler import Sampler, plan_jobs, policy_config
from .context import EstimateContext
from .model import Part, Span, StageEstimate


def passrate_estimate(ctx: EstimateContext, settings: PassrateConfig, policy: LLMConfig) -> StageEstimate:
    tasks = choose_tasks(settings)
    config = policy_config(policy, policy.concurrency)
    label = settings.label or config.model
    jobs, scored = plan_jobs(tasks, settings.n, _stored(ctx, label), settings.retry_failures)
    counter = ctx.counter(config.model)
    sampler = Sampler(config, label, None, None, settings.temperature, settings.max_tokens)  # only its params
    prompt_of: dict[str, int] = {}
    to_send = prompt = cached = 0
    for job in (job for job in jobs if job.unchecked is None):  # an unchecked reply is only checked again
        if ctx.answered(config, Policy().request(job.task, job.index, sampler.params(job.index))):
            cached += 1
            continue
        if job.task.id not in prompt_of:
            prompt_of[job.task.id] = counter.count(Policy.messages(job.task))
        to_send += 1
        prompt += prompt_of[job.task.id]
    per_call, source = ctx.completion(config.model, STAGE, "passrate", settings.max_tokens)
    rollouts = Part("rollouts", Span(to_send, to_send), Span(prompt, prompt),
                    Span(to_send * per_call, to_send * settings.max_tokens), ctx.pricing(config))  # fmt: skip
    notes = [
        f"{len(tasks)} tasks x n {settings.n} = {len(tasks) * settings.n} rollouts: {scored} already scored, "
        f"{cached} answered in the call log, {len(jobs) - to_send - cached} only to check again; requests are exact",
        f"completion tokens: expected {per_call:.0f} per rollout ({source}); most: max_tokens {settings.max_tokens}",
    ]
    return StageEstimate("passrate", config.model, to_send, "rollout", scored + cached, counter.method,
                         ctx.pricing(config), [rollouts], notes)  # fmt: skip


def _stored(ctx: EstimateContext, label: str) -> StoredSlots:
    if ctx.store is None:
        return StoredSlots(set(), {}, set())
    try:
        return stored_slots(ctx.store, label)
    except (duckdb.Error, FactoryError):  # a store from before the rollouts table
        return StoredSlots(set(), {}, set())
