"""`factory pairs`: AutoCoA's "when to act" pairs from a run's coa trajectories, resumably.

    outcome = make_pairs(config, PairsConfig())       # config: a FactoryConfig (.run_dir, .llm, .coa)

Per verified coa trajectory: its decision point (points.py); the left-out reasons that need no
model (malformed turns, no tool call, no task, no reference) before any request; then one recall
request (recall.py), laid out in the variant's grammar (layout.py), its answer judged by the task's
checker, and the rule (rule.py): a pair written at once, or a reason counted. Every trajectory is
judged again on a rerun: the LLM cache answers what was asked before (a failed request is asked again),
so a rerun costs no paid call, writes no duplicate (a pair is updated in place by its id) and picks up
rollouts sampled since. One trajectory's bug is counted `internal_error`, and the batch goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from ...checks import CHECKERS, Checker, CheckResult, default_checker, get_checker
from ...errors import FactoryError, SendingStopped
from ...llm import LLMClient
from ...llm.progress import CallCounter
from ...run import open_run
from ...sandbox.api import run_sync
from ...store import Store
from ...tasks import Task
from ..defaults import coa_llm, resolve_coa
from .config import PairsConfig
from .evidence import ClosedBook, closed_book, has_reference, reference_tasks, rollouts_label, task_files
from .points import DecisionPoint, read_points
from .recall import STAGE, Recall
from .rows import drop_pair, stored_counts, write_pair
from .rule import Decision, decide, pair_id, pair_row, unanswered

if TYPE_CHECKING:
    from ...run_config import FactoryConfig


class PairsError(FactoryError):
    """`factory pairs` cannot start: no run store, or no task file to read the references from."""


@dataclass
class PairsOutcome:
    run_id: str
    model: str  # the recall model
    rollouts_model: str  # the label the closed-book evidence was read under
    trajectories: int
    made: Counter = field(default_factory=Counter)  # kind -> pairs decided by this run
    left_out: Counter = field(default_factory=Counter)  # reason -> trajectories without a pair
    examples: dict[str, str] = field(default_factory=dict)  # reason -> "trajectory id: detail" (the first)
    stored: dict[str, int] = field(default_factory=dict)  # kind -> rows of this recall model in the table


def make_pairs(config: FactoryConfig, settings: PairsConfig, progress: bool = False) -> PairsOutcome:
    store_file = Path(config.run_dir) / "factory.sqlite"
    if not store_file.exists():
        raise PairsError(
            f"{config.run_dir}: no run store ({store_file.name}); make coa trajectories there first "
            f"(factory coa {config.run_dir} --tasks FILE)"
        )
    return run_sync(amake_pairs(config, settings, progress))


async def amake_pairs(config: FactoryConfig, settings: PairsConfig, progress: bool = False) -> PairsOutcome:
    coa = resolve_coa(config.coa, config.llm)
    llm_config = coa_llm(config.llm, coa)
    with open_run(config.run_dir, "pairs", config) as run:
        points = read_points(run.store)
        tasks = references(run.store, settings, points)
        label = rollouts_label(run.store, settings, llm_config.model)
        rates = closed_book(run.store, label, sorted(tasks))
        checker = known_checker(settings.checker or coa.checker)
        pairer = Pairer(run.store, settings, llm_config.model, tasks, rates, checker, Recall(coa.reply_chars))
        outcome = PairsOutcome(run.run_id, llm_config.model, label, len(points))
        asked = [point for point in points if pairer.ready(point)]
        async with LLMClient(llm_config, run.store, run.run_id) if asked else contextlib.nullcontext() as llm:
            pairer.llm = llm
            await run_all(asked, pairer.one, 2 * llm_config.in_flight(), progress, llm)
        outcome.made, outcome.left_out, outcome.examples = pairer.made, pairer.left_out, pairer.examples
        outcome.stored = stored_counts(run.store, llm_config.model)
    return outcome


def references(store: Store, settings: PairsConfig, points: list[DecisionPoint]) -> dict[str, Task]:
    wanted = {point.task_id for point in points if point.task_id and point.acting}
    paths = task_files(store, settings)
    if wanted and not paths:
        raise PairsError(
            "pairs: no task file to read the references from: name one with --tasks FILE (the run "
            "recorded no coa.tasks or passrate.tasks that exists from here)"
        )
    return reference_tasks(paths, wanted)


def known_checker(name: str | None) -> str | None:
    """A checker name, checked before anything is asked (None: each task's domain default)."""
    if name is not None and name not in CHECKERS:
        raise PairsError(f"pairs: unknown checker '{name}' (known: {', '.join(sorted(CHECKERS))})")
    return name


async def run_all(points: list[DecisionPoint], work, workers: int, progress: bool, llm: LLMClient | None) -> None:
    """`work` on every point, at most `workers` at once; the bar shows the calls' errors, tokens and spend."""
    pending = iter(points)
    bar = tqdm(total=len(points), desc=STAGE, unit="trajectory", disable=not progress)
    with bar, CallCounter([llm] if llm else [], bar):

        async def worker() -> None:
            for point in pending:
                await work(point)
                bar.update(1)

        await asyncio.gather(*(worker() for _ in range(min(workers, len(points)))))


class Pairer:
    """Judges one decision point at a time: recall request, check, rule, row (or a counted reason)."""

    def __init__(self, store: Store, settings: PairsConfig, model: str, tasks: dict[str, Task],
                 rates: dict[str, ClosedBook], checker_name: str | None, role: Recall):  # fmt: skip
        self.store, self.settings, self.model, self.tasks, self.role = store, settings, model, tasks, role
        self.rates, self.checker_name = rates, checker_name  # closed-book figures by task id; None: by domain
        self.llm: LLMClient | None = None
        self.made: Counter = Counter()
        self.left_out: Counter = Counter()
        self.examples: dict[str, str] = {}

    def ready(self, point: DecisionPoint) -> bool:
        """Whether the point is worth a request; if not, its reason is counted here."""
        task = self.tasks.get(point.task_id or "")
        if point.problem is not None:
            return self.leave(point, "malformed_turns", point.problem)
        if point.acting is None:
            return self.leave(point, "no_tool_call", "the trajectory answers without calling a tool")
        if point.task_id is None:
            return self.leave(point, "no_task", "the trajectory has no task id")
        if task is None:
            return self.leave(point, "task_not_found", f"task {point.task_id} is in none of the task files")
        if not has_reference(task):
            return self.leave(point, "no_reference", f"task {point.task_id} has no reference answer or tests")
        return True

    def leave(self, point: DecisionPoint, reason: str, detail: str) -> bool:
        self.left_out[reason] += 1
        self.examples.setdefault(reason, f"{point.trajectory_id}: {detail}")
        return False

    async def one(self, point: DecisionPoint) -> None:
        try:
            await self.judge(point, self.tasks[point.task_id])
        except SendingStopped:
            raise  # the store cannot be written, or the spend cap is reached: the batch stops
        except Exception as exc:  # one trajectory's bug must not end the batch
            self.leave(point, "internal_error", f"{type(exc).__name__}: {exc}")

    async def judge(self, point: DecisionPoint, task: Task) -> None:
        domain = point.domain or task.domain
        result = await self.llm.run(self.role.request(point, domain))
        if not result.ok:
            self.leave(point, "llm_error", f"{result.error_kind}: {result.error}")
            return
        recall = self.role.parse(result.parsed, point.variant, domain)
        refused = unanswered(recall, point.variant)
        if refused is not None:
            self.no_pair(point, refused)
            return
        checker = self.checker(task)
        check = await checked(checker, recall.answer, task)
        closed = self.rates.get(task.id)
        decision = decide(check, recall.score, point, closed, self.settings)
        if decision.kind is None:
            self.no_pair(point, decision)
            return
        row = pair_row(point, recall, check, checker.name, decision, closed, self.model, result.request_hash)
        write_pair(self.store, row)
        self.made[decision.kind] += 1

    def no_pair(self, point: DecisionPoint, decision: Decision) -> None:
        """The reason counted; a stored pair goes when the verdict is against it."""
        if decision.rules_out:
            drop_pair(self.store, pair_id(point, self.model))
        self.leave(point, decision.reason, decision.detail)

    def checker(self, task: Task) -> Checker:
        if self.checker_name == "llm_judge":
            return get_checker("llm_judge", llm=self.llm)
        return get_checker(self.checker_name) if self.checker_name else default_checker(task)


async def checked(checker: Checker, answer: str, task: Task) -> CheckResult:
    """The checker's verdict; a checker that cannot run is an undecided check, not a wrong answer."""
    try:
        return await checker.acheck(answer, task)
    except Exception as exc:
        return CheckResult(correct=False, score=0.0, detail=f"{type(exc).__name__}: {exc}", error=str(exc))
