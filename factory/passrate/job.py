"""One pass-rate job on a run folder: choose the tasks, sample what is missing, summarize the rates.

`factory passrate` and the passrate stage of `factory run` both run it, so they write the
same rollouts and print the same lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm import LLMConfig
from ..run import Run, open_run
from ..scale import ray_enabled, shard_subset
from ..tasks import Task, select_tasks
from .config import PassrateConfig
from .rates import summarize
from .sampler import STAGE, ensure_rollouts

if TYPE_CHECKING:
    from ..run_config import FactoryConfig


def run_passrate(
    config: FactoryConfig, settings: PassrateConfig, policy: LLMConfig, progress: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sample `settings.n` rollouts per task from `policy` into config.run_dir's store; (what it did, rates).

    With `ray.enabled` the tasks are sharded by id (all rollouts of a task in one shard), each shard
    runs this function on its slice, and the rates are read from the merged store (factory/scale/).
    """
    if ray_enabled(config):
        return run_passrate_on_ray(config, settings, policy, progress)
    tasks = shard_subset(choose_tasks(settings), config)
    with open_run(config.run_dir, STAGE, config) as run:
        outcome = ensure_rollouts(
            run.store, tasks, policy, settings.n, settings.label, policy.concurrency, settings.temperature,
            settings.max_tokens, checker=settings.checker, run_id=run.run_id,
            retry_failures=settings.retry_failures, progress=progress,
        )  # fmt: skip
        summary = summarize(run.store, outcome["model"], settings.threshold, [task.id for task in tasks], settings.n)
    return outcome, summary


def passrate_shard(config: FactoryConfig, settings: PassrateConfig, policy: LLMConfig) -> dict[str, Any]:
    """One shard's work, in its Ray worker: what it did (the shards' counts are summed)."""
    return run_passrate(config, settings, policy, progress=False)[0]


def run_passrate_on_ray(
    config: FactoryConfig, settings: PassrateConfig, policy: LLMConfig, progress: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..scale.sharded import run_on_ray, summed

    def finish(config: FactoryConfig, run: Run, results: list[dict]) -> tuple[dict[str, Any], dict[str, Any]]:
        outcome = summed(results, same=("n",))
        task_ids = [task.id for task in choose_tasks(settings)]
        return outcome, summarize(run.store, outcome["model"], settings.threshold, task_ids, settings.n)

    return run_on_ray(config, STAGE, "task id", passrate_shard, (settings, policy), finish, progress)


def choose_tasks(settings: PassrateConfig) -> list[Task]:
    missing = (
        "passrate needs tasks: --tasks FILE, or passrate.tasks in the config (a JSONL/parquet task file or a saved "
        "dataset)"
    )
    return select_tasks(settings.tasks, settings.domain, settings.count, settings.seed, missing)


def format_passrate(outcome: dict[str, Any], summary: dict[str, Any]) -> str:
    mean = "-" if summary["mean_pass_rate"] is None else f"{summary['mean_pass_rate']:.3f}"
    histogram = " | ".join(f"{bucket}: {count}" for bucket, count in summary["histogram"].items())
    return "\n".join([
        (f"model {outcome['model']}: {outcome['tasks']} tasks x {outcome['n']} rollouts; this run: "
         f"{outcome['requested']} requested, {outcome['already_scored']} already scored, "
         f"{outcome['rechecked']} rechecked, {outcome['llm_failures']} LLM failures, "
         f"{outcome['check_errors']} undecided checks"),
        (f"tasks: {summary['tasks']}, rollouts: {summary['rollouts']} ({summary['scored']} scored, "
         f"{summary['failed']} failed or undecided)"),
        f"mean pass rate: {mean}",
        f"pass rate histogram: {histogram}",
        f"uniform groups: {summary['uniform']} (all right {summary['all_right']}, all wrong {summary['all_wrong']})",
        (f"kept at threshold {summary['threshold']:g}: {summary['kept']} of {summary['tasks']} tasks "
         f"(pass rate <= {summary['threshold']:g})"),
    ])  # fmt: skip
