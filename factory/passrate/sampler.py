"""Sample N rollouts per task from a policy model, check each, store every one (resumably).

    summary = ensure_rollouts(store, tasks, LLMConfig(model="qwen", base_url="http://gpu:8000/v1"), n=32)

Each (task, sample_index) is one request through factory.llm: the sample index is
part of the cache key, so N samples of one prompt are N distinct requests, and a
rerun gets a finished request back from the call log instead of the model. A
slot with a scored row is never asked again; see rows.py for the other states.
A failed request becomes a row with correct NULL and the error in `detail`; a
reply cut off at max_tokens is a sample like any other (RL gives it no reward).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .. import checks
from ..config import validate_config
from ..errors import FactoryError, SendingStopped, StoreWriteError
from ..llm import LLMClient, LLMConfig
from ..llm.progress import CallCounter
from ..sandbox.api import run_sync  # asyncio.run, in a helper thread when a loop is already running
from ..store import Store, utcnow
from ..store.db import STORE_ERRORS
from ..tasks import Task, load_tasks
from .prompting import STAGE, Policy
from .rows import RolloutWriter, StoredSlots, Unchecked, count_rollouts, stored_slots


class PassrateError(FactoryError):
    """Pass-rate sampling was asked for with settings it cannot use; the message names the setting."""


@dataclass
class Job:
    task: Task
    index: int
    unchecked: Unchecked | None = None  # set when the reply is stored and only its check is missing


def ensure_rollouts(store: Store, tasks: Iterable[Task] | str | Path, llm_config: LLMConfig | dict[str, Any],
                    n: int = 32, model_label: str | None = None, concurrency: int = 8, temperature: float = 1.0,
                    max_tokens: int = 4096, *, checker: str | None = None, run_id: str | None = None,
                    retry_failures: bool = True, progress: bool = False) -> dict[str, Any]:  # fmt: skip
    """Make sure every task has n rollouts of `model_label` (default: the config's model) in `rollouts`.

    tasks: Task objects or a task file. checker: a factory.checks name instead of the domain default.
    retry_failures: ask again for samples whose request failed before. Returns counts of what it did.
    """
    return run_sync(aensure_rollouts(
        store, tasks, llm_config, n, model_label, concurrency, temperature, max_tokens,
        checker=checker, run_id=run_id, retry_failures=retry_failures, progress=progress,
    ))  # fmt: skip


async def aensure_rollouts(store: Store, tasks: Iterable[Task] | str | Path, llm_config: LLMConfig | dict[str, Any],
                           n: int = 32, model_label: str | None = None, concurrency: int = 8,
                           temperature: float = 1.0, max_tokens: int = 4096, *, checker: str | None = None,
                           run_id: str | None = None, retry_failures: bool = True,
                           progress: bool = False) -> dict[str, Any]:  # fmt: skip
    check_settings(n, concurrency, temperature, max_tokens)
    task_list = as_tasks(tasks)
    config = policy_config(llm_config, concurrency)
    model = model_label or config.model
    jobs, already = plan_jobs(task_list, n, stored_slots(store, model), retry_failures)
    fixed_checker = checks.get_checker(checker) if checker else None
    sampler = Sampler(config, model, RolloutWriter(store), fixed_checker, temperature, max_tokens)
    # Only checks to redo, or nothing to do: no client, so no embedded model is started for nothing.
    needs_model = any(job.unchecked is None for job in jobs)
    disk_full = False
    try:
        async with LLMClient(config, store, run_id) if needs_model else contextlib.nullcontext() as sampler.llm:
            await run_jobs(jobs, sampler.fill, workers=2 * config.in_flight(), progress=progress, llm=sampler.llm)
    except StoreWriteError:
        disk_full = True
        raise
    finally:  # an interrupted run keeps every rollout it finished (what fits, when the store cannot be written)
        with contextlib.suppress(*STORE_ERRORS) if disk_full else contextlib.nullcontext():
            sampler.writer.flush()
    return {"model": model, "tasks": len(task_list), "n": n, "already_scored": already, **sampler.tally,
            "rollouts": count_rollouts(store, model, [task.id for task in task_list])}  # fmt: skip


def check_settings(n: int, concurrency: int, temperature: float, max_tokens: int) -> None:
    problems = [
        f"n must be >= 1, not {n}" if n < 1 else None,
        f"concurrency must be >= 1, not {concurrency}" if concurrency < 1 else None,
        f"temperature must be between 0 and 2, not {temperature}" if not 0 <= temperature <= 2 else None,
        f"max_tokens must be >= 1, not {max_tokens}" if max_tokens < 1 else None,
    ]
    first = next((problem for problem in problems if problem), None)
    if first:
        raise PassrateError(f"pass-rate sampling: {first}")


def as_tasks(tasks: Iterable[Task] | str | Path) -> list[Task]:
    """Tasks from a file or an iterable, each id once (the first wins)."""
    if isinstance(tasks, (str, Path)):
        return load_tasks(tasks)
    unique: dict[str, Task] = {}
    for task in tasks:
        if not isinstance(task, Task):
            raise PassrateError(f"pass-rate sampling needs Task objects or a task file, got {type(task).__name__}")
        unique.setdefault(task.id, task)
    return list(unique.values())


def policy_config(llm_config: LLMConfig | dict[str, Any], concurrency: int) -> LLMConfig:
    """The policy's LLM config, with this batch's concurrency. No re-asks: a reply cut
    off at max_tokens is a sample, and asking again with more room would change it."""
    if not isinstance(llm_config, (LLMConfig, dict)):
        raise PassrateError(f"the policy config must be an LLMConfig or a dict, got {type(llm_config).__name__}")
    data = llm_config.model_dump() if isinstance(llm_config, LLMConfig) else dict(llm_config)
    data.update(concurrency=concurrency, max_parse_retries=0)
    return validate_config(LLMConfig, data, "pass-rate policy config")


def plan_jobs(tasks: list[Task], n: int, stored: StoredSlots, retry_failures: bool) -> tuple[list[Job], int]:
    """(the slots to fill, how many were already scored)."""
    jobs, already = [], 0
    for task in tasks:
        for index in range(n):
            slot = (task.id, index)
            if slot in stored.scored:
                already += 1
            elif slot in stored.unchecked:
                jobs.append(Job(task, index, stored.unchecked[slot]))
            elif retry_failures or slot not in stored.failed:
                jobs.append(Job(task, index))
    return jobs, already


async def run_jobs(jobs: list[Job], work, workers: int, progress: bool, llm: LLMClient | None = None) -> None:
    """Run `work` on every job with at most `workers` at once (each worker takes the next job);
    the bar's postfix shows `llm`'s errors, tokens and spend so far."""
    pending = iter(jobs)
    bar = tqdm(total=len(jobs), desc=STAGE, unit="rollout", disable=not progress)
    with bar, CallCounter([llm] if llm else [], bar):

        async def worker() -> None:
            for job in pending:
                await work(job)
                bar.update(1)

        await asyncio.gather(*(worker() for _ in range(min(workers, len(jobs)))))


class Sampler:
    """Fills one slot at a time: request (or the stored reply), check, row."""

    def __init__(self, config: LLMConfig, model: str, writer: RolloutWriter, checker: checks.Checker | None,
                 temperature: float, max_tokens: int):  # fmt: skip
        self.config, self.model, self.writer, self.checker = config, model, writer, checker
        self.temperature, self.max_tokens = temperature, max_tokens
        self.llm: LLMClient | None = None  # set while jobs that need the model run
        self.tally = Counter(requested=0, rechecked=0, llm_failures=0, check_errors=0)

    async def fill(self, job: Job) -> None:
        try:
            row = await (self.recheck(job) if job.unchecked else self.sample(job))
        except SendingStopped:
            raise  # the store cannot be written: the batch stops, the slot stays unfilled for the rerun
        except Exception as exc:  # one slot's bug must not end the batch: record it
            completion = job.unchecked.completion if job.unchecked else None
            row = self.row(job, completion, None, f"internal error: {type(exc).__name__}: {exc}")
        self.writer.add(row)

    async def sample(self, job: Job) -> dict[str, Any]:
        self.tally["requested"] += 1
        result = await self.llm.run(Policy().request(job.task, job.index, self.params(job.index)))
        cut_off = result.error_kind == "length" and result.text is not None
        if not (result.ok or cut_off):
            self.tally["llm_failures"] += 1
            return self.row(job, None, result.request_hash, f"llm error {result.error_kind}: {result.error}")
        note = "cut off at max_tokens; " if cut_off else ""
        return await self.scored(job, result.text, result.request_hash, note)

    async def recheck(self, job: Job) -> dict[str, Any]:
        self.tally["rechecked"] += 1
        return await self.scored(job, job.unchecked.completion, job.unchecked.request_hash)

    def params(self, index: int) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        seed = self.config.params.get("seed")
        if isinstance(seed, int):  # one fixed seed would make all N samples the same reply
            params["seed"] = seed + index
        return params

    async def scored(self, job: Job, completion: str, request_hash: str | None, note: str = "") -> dict[str, Any]:
        try:
            check = await (self.checker or checks.default_checker(job.task)).acheck(completion, job.task)
        except Exception as exc:  # the checker could not run (math-verify missing, a worker that would not start)
            check = checks.CheckResult(correct=False, score=0.0, error=f"{type(exc).__name__}: {exc}")
        if check.error:  # undecided, not wrong: left unscored, checked again on a rerun
            self.tally["check_errors"] += 1
            return self.row(job, completion, request_hash, f"{note}check error: {check.error}")
        return self.row(job, completion, request_hash, note + check.detail, check.correct, check.score)

    def row(self, job: Job, completion: str | None, request_hash: str | None, detail: str,
            correct: bool | None = None, score: float | None = None) -> dict[str, Any]:  # fmt: skip
        answer = Policy.parse(completion, job.task.domain) if completion is not None else None
        return {"task_id": job.task.id, "model": self.model, "sample_index": job.index, "completion": completion,
                "answer": answer, "correct": correct, "score": score, "detail": detail,
                "request_hash": request_hash, "created_at": utcnow()}  # fmt: skip
