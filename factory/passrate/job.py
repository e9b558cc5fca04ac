"""One pass-rate job on a run folder: choose the tasks, sample what is missing, summarize the rates.

`factory passrate` and the passrate stage of `factory run` both run it, so they write the
same rollouts and print the same lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm import LLMConfig
from ..run import open_run
from ..tasks import Task, select_tasks
from .config import PassrateConfig
from .rates import summarize
from .sampler import STAGE, ensure_rollouts

if TYPE_CHECKING:
    from ..run_config import FactoryConfig


def run_passrate(
    config: FactoryConfig, settings: PassrateConfig, policy: LLMConfig, progress: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Sample `settings.n` rollouts per task from `policy` into config.run_dir's store; (what it did, rates)."""
    tasks = choose_tasks(settings)
    with open_run(config.run_dir, STAGE, config) as run:
        outcome = ensure_rollouts(
            run.store, tasks, policy, settings.n, settings.label, policy.concurrency, settings.temperature,
            settings.max_tokens, checker=settings.checker, run_id=run.run_id,
            retry_failures=settings.retry_failures, progress=progress,
        )  # fmt: skip
        summary = summarize(run.store, outcome["model"], settings.threshold, [task.id for task in tasks], settings.n)
    return outcome, summary


def choose_tasks(settings: PassrateConfig) -> list[Task]:
    missing = "passrate needs tasks: --tasks FILE (a JSONL/parquet task file or a saved dataset)"
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
