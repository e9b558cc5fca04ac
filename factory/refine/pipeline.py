"""The AgentRefine generation loop for one persona, and the batch around it.

Per persona, within a budget of LLM calls (4 by default, the script included):
write a script and verify it (regenerating with the problems fed back), then
simulate a trajectory and verify it; on a failure continue from the verified
prefix, or start over when the story is too clean. With injection on, a
corrupted action is placed at the end of the prefix whenever the trajectory
still lacks mistakes, so corrections are guaranteed rather than hoped for.
Every attempt's verdict is stored; reruns skip finished personas and replay
cached LLM calls.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..llm import LLMClient
from ..settings import RefineConfig
from ..store import Store
from .grounding import ground_steps, state_after
from .inject import injected_step
from .output import build_trajectory
from .roles import ScriptWriter, TrajectorySimulator
from .script import Script
from .solvable import solvability_problems
from .store import save_script, save_trajectory, save_verdict
from .verify import Verdict, verify_steps


class CodeChecker(Protocol):
    """Runs scripts' validation code (see code_check.SandboxCodeChecker)."""

    def script_problems(self, script: Script) -> list[str]: ...

    def step_check(self, script: Script): ...


@dataclass
class Spend:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def add(self, result) -> None:
        self.calls += 1
        self.prompt_tokens += result.prompt_tokens or 0
        self.completion_tokens += result.completion_tokens or 0
        if result.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + result.cost_usd


@dataclass
class Attempts:
    prefix: list[dict] = field(default_factory=list)
    attempt: int = 0


async def write_script(llm: LLMClient, store: Store, persona_id: str, text: str, settings: RefineConfig,
                       checker: CodeChecker | None, spend: Spend) -> tuple[Script | None, str | None]:  # fmt: skip
    writer = ScriptWriter(with_code=settings.with_code)
    feedback: list[str] | None = None
    for attempt in range(min(settings.script_tries, settings.budget)):
        result = await llm.run(writer.request(persona_id, text, attempt, feedback))
        spend.add(result)
        script_id = f"{persona_id}:{attempt}"
        if not result.ok:
            save_script(store, script_id, persona_id, attempt, None, [f"{result.error_kind}: {result.error}"])
            continue
        script = writer.parse(result.parsed, persona_id)
        # Sandbox runs block: keep them off the event loop so other personas' calls flow.
        problems = await asyncio.to_thread(checker.script_problems, script) if checker and settings.with_code else []
        # Declarative scripts must declare their goal: without code nothing else can judge completion.
        problems += solvability_problems(script, require_goal=not settings.with_code)
        save_script(store, script_id, persona_id, attempt, script, problems)
        if not problems:
            return script, script_id
        feedback = problems
    return None, None


def _maybe_inject(script: Script, steps: list[dict], settings: RefineConfig, rng: random.Random) -> list[dict]:
    mistakes = sum(1 for s in steps if s["evaluation"]["error"] != "none")
    if not settings.injection or mistakes >= settings.min_corrections:
        return steps
    if steps and steps[-1]["evaluation"]["error"] != "none":
        return steps  # the last mistake is not corrected yet
    step = injected_step(script, state_after(script, steps), rng)
    return steps + [step] if step else steps


def _next_prefix(steps: list[dict], verdict: Verdict, settings: RefineConfig) -> list[dict]:
    if verdict.rule == "too_few_corrections" and settings.injection:
        return steps[:-1]  # drop the final step; an injected mistake goes there instead
    if verdict.restart:
        return []
    return steps[: verdict.failed_step]


async def refine_one(llm: LLMClient, store: Store, persona_id: str, text: str, settings: RefineConfig,
                     checker: CodeChecker | None = None) -> bool:  # fmt: skip
    """Generate and verify one trajectory for a persona; store it. True when verified."""
    trajectory_id = f"refine:{persona_id}"
    spend = Spend()
    script, script_id = await write_script(llm, store, persona_id, text, settings, checker, spend)
    base = {"trajectory_id": trajectory_id, "source": "refine", "persona_id": persona_id, "script_id": script_id}
    if script is None:
        save_trajectory(store, {**base, "verified": False, "reason": "no verified script", **_spend_row(spend)}, None)
        return False
    simulator = TrajectorySimulator(settings.min_corrections, max_steps=settings.max_steps)
    extra = checker.step_check(script) if checker and settings.with_code else None
    state = Attempts()
    last_reason, last_steps = "budget exhausted before any trajectory", None
    while spend.calls < settings.budget:
        rng = random.Random(f"{settings.seed}:{persona_id}:{state.attempt}")
        prefix = _maybe_inject(script, state.prefix, settings, rng)
        result = await llm.run(simulator.request(script, prefix, state.attempt, trajectory_id))
        spend.add(result)
        if not result.ok:
            last_reason = f"llm {result.error_kind}: {result.error}"
            save_verdict(store, trajectory_id, state.attempt, None, last_reason, len(prefix))
            state.attempt += 1
            continue
        new_steps = simulator.parse(result.parsed)
        if settings.dm_evaluation == "world":
            new_steps = ground_steps(script, prefix, new_steps, extra)
        steps = prefix + new_steps
        verdict = await asyncio.to_thread(verify_steps, script, steps, settings.min_corrections, extra)
        save_verdict(store, trajectory_id, state.attempt, verdict, verdict.reason, len(steps))
        if verdict.ok:
            trajectory = build_trajectory(trajectory_id, script, verdict.checks, {"llm_calls": spend.calls, "dm_evaluation": settings.dm_evaluation})
            row = {**base, "verified": True, "reason": None, "steps": json.dumps(steps), **_spend_row(spend)}
            save_trajectory(store, row, trajectory)
            return True
        last_reason, last_steps = f"{verdict.rule}: {verdict.reason}", steps
        state = Attempts(_next_prefix(steps, verdict, settings), state.attempt + 1)
    steps_json = json.dumps(last_steps) if last_steps else None
    save_trajectory(store, {**base, "verified": False, "reason": last_reason, "steps": steps_json, **_spend_row(spend)}, None)
    return False


def _spend_row(spend: Spend) -> dict[str, Any]:
    return {"llm_calls": spend.calls, "prompt_tokens": spend.prompt_tokens,
            "completion_tokens": spend.completion_tokens, "cost_usd": spend.cost_usd}  # fmt: skip
