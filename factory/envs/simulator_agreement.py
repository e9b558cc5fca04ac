"""How often the simulated environment says what the real world says, on recorded trajectories.

Each recorded move is asked of the simulator with the real history before it (the world's verdicts and the
lines the player was told: teacher-forced, so one wrong answer does not spoil the moves after it) and its
answer is compared with `world.step`'s (simulator_truth.py): accepted or refused, goal reached or not, and the
error type, overall and per error type the world gave, with counts. A simulator failure (no verdict) counts
as a disagreement on every measure and is counted on its own. `benchmarks/simulated_env_agreement.py` runs
this on the embedded model and on recorded capable-model replies; `store_cases` reads a run's verified refine
trajectories, so the same measure runs on a user's own run (`--run DIR`).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from ..refine.script import Script
from ..store import Store
from .simulator import SimulatedStep, action_call
from .simulator_truth import JudgedStep, history_before, judge_steps

EXAMPLES = 12  # disagreements shown in the figures, the first ones in case order


class Simulator(Protocol):
    async def step(self, script: Script, history: list[dict], action: dict) -> SimulatedStep: ...


@dataclass
class Case:
    """A recorded trajectory: its script and its moves ({"action", "observation", "evaluation"?})."""

    case_id: str
    script: Script
    steps: list[dict]


@dataclass
class Compared:
    case_id: str
    index: int
    world: JudgedStep
    simulated: SimulatedStep

    @property
    def world_error(self) -> str:
        return self.world.error_type or "none"

    @property
    def simulated_error(self) -> str:
        return self.simulated.error_type or "none"

    @property
    def accepted_agrees(self) -> bool:
        return not self.simulated.failed and self.simulated.accepted == self.world.accepted

    @property
    def goal_agrees(self) -> bool:
        return not self.simulated.failed and self.simulated.goal_reached == self.world.goal_reached

    @property
    def error_type_agrees(self) -> bool:
        return self.simulated_error == self.world_error

    @property
    def agrees(self) -> bool:
        return self.accepted_agrees and self.goal_agrees and self.error_type_agrees

    def example(self) -> dict[str, Any]:
        world, simulated = self.world, self.simulated
        return {"case": self.case_id, "step": self.index, "action": action_call(world.action),
                "world": _verdict(world.accepted, self.world_error, world.goal_reached),
                "simulator": _verdict(simulated.accepted, self.simulated_error, simulated.goal_reached),
                "told": simulated.observation}  # fmt: skip


def _verdict(accepted: bool, error: str, goal: bool) -> str:
    """ "accepted, goal" / "refused location": one verdict in words, for the disagreement examples."""
    return ("accepted" if accepted else f"refused {error}") + (", goal" if goal else "")


def _counts(rows: list[Compared]) -> dict[str, Any]:
    n = len(rows)
    counts = {
        "steps": n,
        "accepted_agree": sum(r.accepted_agrees for r in rows),
        "goal_agree": sum(r.goal_agrees for r in rows),
        "error_type_agree": sum(r.error_type_agrees for r in rows),
        "simulator_failed": sum(r.simulated.failed for r in rows),
    }
    rates = {f"{key[:-6]}_agreement": round(counts[key] / n, 3) if n else None for key in list(counts)[1:4]}
    return {**rates, **_baselines(rows), **counts}


def _baselines(rows: list[Compared]) -> dict[str, float | None]:
    """What a simulator that always says the same thing would score: accepting every move (or refusing
    every one, whichever the sample favours) and never calling the goal reached. An agreement at or below
    these figures says nothing about the simulator."""
    n = len(rows)
    accepted = sum(r.world.accepted for r in rows)
    goal = sum(r.world.goal_reached for r in rows)
    return {
        "accepted_majority_baseline": round(max(accepted, n - accepted) / n, 3) if n else None,
        "goal_never_baseline": round((n - goal) / n, 3) if n else None,
    }


@dataclass
class Agreement:
    compared: list[Compared]
    trajectories: int
    skipped: int = 0  # moves refused by validation code, which the simulator cannot see

    def figures(self) -> dict[str, Any]:
        return {"trajectories": self.trajectories, **_counts(self.compared), "skipped_code_refusals": self.skipped,
                "accepted_confusion": self._confusion(), "goal": self._goal(), "by_world_error": self._by_error(),
                "disagreements": [r.example() for r in self.compared if not r.agrees][:EXAMPLES]}  # fmt: skip

    def _by_error(self) -> dict[str, dict[str, Any]]:
        by_error = {}
        for error in sorted({r.world_error for r in self.compared}):
            rows = [r for r in self.compared if r.world_error == error]
            by_error[error] = {**_counts(rows), "simulator_said": dict(Counter(r.simulated_error for r in rows))}
        return by_error

    def _goal(self) -> dict[str, int]:
        on_goal = [r for r in self.compared if r.world.goal_reached]
        elsewhere = [r for r in self.compared if r.simulated.goal_reached and not r.world.goal_reached]
        return {
            "world_goal_steps": len(on_goal),
            "simulator_goal_on_them": sum(r.simulated.goal_reached for r in on_goal),
            "simulator_goal_elsewhere": len(elsewhere),
        }

    def _confusion(self) -> dict[str, dict[str, int]]:
        table: dict[str, Counter] = {"world accepted": Counter(), "world refused": Counter()}
        for r in self.compared:
            said = "simulator failed" if r.simulated.failed else \
                "simulator accepted" if r.simulated.accepted else "simulator refused"  # fmt: skip
            table["world accepted" if r.world.accepted else "world refused"][said] += 1
        return {world: dict(sorted(said.items())) for world, said in table.items()}


def agreement_jobs(cases: list[Case], max_steps: int | None = None) -> tuple[list[tuple[Case, int, list]], int]:
    """(case, move index, the case's judged moves) for each move measured, and how many were skipped."""
    jobs, skipped = [], 0
    for case in cases:
        judged = judge_steps(case.script, case.steps)
        for index, truth in enumerate(judged):
            if truth.code_refused:
                skipped += 1
            else:
                jobs.append((case, index, judged))
    return spread(jobs, max_steps), skipped


def spread(items: list, count: int | None) -> list:
    """`count` items evenly spaced over the list (all when None or more): a small sample still covers every case."""
    if count is None or count >= len(items):
        return items
    return [items[index * len(items) // count] for index in range(count)]


async def measure_agreement(simulator: Simulator, cases: list[Case], max_steps: int | None = None) -> Agreement:
    """Ask the simulator every recorded move (or `max_steps` of them, spread) and compare it with the world's verdict."""
    jobs, skipped = agreement_jobs(cases, max_steps)
    answers = await asyncio.gather(
        *(simulator.step(case.script, history_before(judged, i), judged[i].action) for case, i, judged in jobs)
    )
    compared = [Compared(case.case_id, i, judged[i], answer) for (case, i, judged), answer in zip(jobs, answers)]
    return Agreement(compared, len({case.case_id for case, _, _ in jobs}), skipped)


def store_cases(store: Store, limit: int | None = None) -> list[Case]:
    """A run's verified refine trajectories with their scripts, in trajectory id order."""
    rows = store.query(f"""
        SELECT t.trajectory_id, t.steps, sc.script FROM trajectories t JOIN scripts sc USING (script_id)
        WHERE t.verified AND t.source = 'refine' AND t.steps IS NOT NULL AND sc.script IS NOT NULL
        ORDER BY t.trajectory_id {f"LIMIT {int(limit)}" if limit else ""}""")
    return [Case(tid, Script.model_validate_json(script), json.loads(steps)) for tid, steps, script in rows]
