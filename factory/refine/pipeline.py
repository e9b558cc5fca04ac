"""The AgentRefine generation loop for one persona, and the batch around it.

Per persona, within a budget of LLM calls (4 by default, the script included):
write a script and verify it (regenerating with the problems fed back), then
let the LLM play the whole trajectory and verify it; on a failure continue from
the verified prefix, or start over when the story fails at its first step.
With injection on, each row aims for a number of corrected mistakes drawn from
`mistake_counts`; when the verified steps hold fewer (the LLM's own mistakes
count), mistakes are injected at drawn positions inside them (inject.py) and
the next call writes the open thoughts and continues from the last one. A
verified trajectory is kept even if that extra call fails. Every attempt's
verdict is stored; reruns skip finished personas and replay cached LLM calls.
With `trajectories: scaffolded` (small models) the world plays the trajectory
instead and the LLM writes the player's thoughts (scaffold.py).
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..llm import LLMClient
from ..store import Store
from .config import RefineConfig
from .grounding import ground_steps
from .inject import corrections_before, draw_target, fill_open, inject_mistakes
from .output import build_trajectory
from .roles import ScriptWriter, TrajectorySimulator
from .scaffold import scaffold_trajectory
from .script import Script
from .slips import SlipMix, label_slips
from .solvable import solvability_problems
from .store import save_script, save_trajectory, save_verdict
from .verify import TrajectoryVerdict, verify_steps


class CodeChecker(Protocol):
    """Runs scripts' validation code (see validation_code.SandboxCodeChecker)."""

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
    if settings.scripts == "procedural":  # batch.py resolves "auto"; no LLM call, the same checks
        from .procedural import SCRIPT_SUFFIX, build_script

        script, script_id = build_script(persona_id, text, settings.seed), f"{persona_id}:{SCRIPT_SUFFIX}"
        problems = solvability_problems(script, require_goal=True)
        save_script(store, script_id, persona_id, 0, script, problems)
        return (None, None) if problems else (script, script_id)
    writer = ScriptWriter(with_code=settings.with_code)
    feedback: list[str] | None = None
    failed: Script | None = None  # the last script that failed its checks: a retry shows it with the feedback
    for attempt in range(min(settings.script_tries, settings.budget)):
        result = await llm.run(writer.request(persona_id, text, attempt, feedback, failed))
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
        feedback, failed = problems, script
    return None, None


def _base(steps: list[dict], verdict: TrajectoryVerdict, settings: RefineConfig) -> list[dict]:
    """The verified steps to build on: all of them when the story held (too few mistakes, or it
    stops short), those before the failed step otherwise; none for a restart without injection."""
    if verdict.ok or verdict.rule in ("too_few_corrections", "not_done"):
        return steps if settings.injection or verdict.rule == "not_done" else []
    return [] if verdict.restart else steps[: verdict.failed_step]


def _next_prefix(
    script: Script, base: list[dict], target: int, settings: RefineConfig, rng: random.Random
) -> list[dict] | None:
    """Where the next call starts: the base with the mistakes it still lacks injected and cut after
    the last one; the base itself when it has enough, or None when mistakes are needed but none fits."""
    if not settings.injection or not base or corrections_before(base, len(base)) >= target:
        if base and base[-1]["evaluation"]["task_done"]:
            return None if settings.injection else []  # a finished story with nothing to add: start over
        return base
    return inject_mistakes(script, base, target, SlipMix.of(settings), settings.first_move_mistakes, rng)


async def refine_one(
    llm: LLMClient, store: Store, persona_id: str, text: str, settings: RefineConfig, checker: CodeChecker | None = None
) -> bool:
    """Generate and verify one trajectory for a persona; store it. True when verified."""
    trajectory_id = f"refine:{persona_id}"
    spend = Spend()
    script, script_id = await write_script(llm, store, persona_id, text, settings, checker, spend)
    base = {"trajectory_id": trajectory_id, "source": "refine", "persona_id": persona_id, "script_id": script_id}
    if script is None:
        save_trajectory(store, {**base, "verified": False, "reason": "no verified script", **_spend_row(spend)}, None)
        return False
    extra = checker.step_check(script) if checker and settings.with_code else None
    if settings.trajectories == "scaffolded":  # batch.py resolves "auto"
        held, last_reason = await scaffold_trajectory(
            llm, store, trajectory_id, persona_id, script, settings, extra, spend
        )
        last_steps = None
    else:
        held, last_reason, last_steps = await _play(
            llm, store, trajectory_id, persona_id, script, settings, extra, spend
        )
    if held is not None:  # verified, possibly before an attempt to add mistakes that did not verify
        _save_verified(store, base, trajectory_id, script, *held, spend, settings)
        return True
    steps_json = json.dumps(label_slips(script, last_steps)) if last_steps else None
    save_trajectory(
        store, {**base, "verified": False, "reason": last_reason, "steps": steps_json, **_spend_row(spend)}, None
    )
    return False


async def _play(llm: LLMClient, store: Store, trajectory_id: str, persona_id: str, script: Script, settings: RefineConfig,
                extra, spend: Spend,
                ) -> tuple[tuple[list[dict], TrajectoryVerdict] | None, str, list[dict] | None]:  # fmt: skip
    """The paper's loop: the LLM plays DM and player, continued from verified prefixes within the budget.
    Returns the verified (steps, verdict) or None, the last failure and its steps."""
    simulator = TrajectorySimulator(settings.min_corrections, max_steps=settings.max_steps)
    target = draw_target(
        settings.mistake_counts, settings.min_corrections, random.Random(f"{settings.seed}:{persona_id}:mistakes")
    )
    state = Attempts()
    last_reason, last_steps, held = "budget exhausted before any trajectory", None, None
    while spend.calls < settings.budget:
        result = await llm.run(simulator.request(script, state.prefix, state.attempt, trajectory_id))
        spend.add(result)
        prefix = (
            fill_open(state.prefix, simulator.missing_thoughts(result.parsed), simulator.missing_lines(result.parsed))
            if result.ok
            else None
        )
        if prefix is None:
            last_reason = (
                f"llm {result.error_kind}: {result.error}"
                if not result.ok
                else "format: a missing thought or DM line left empty"
            )
            save_verdict(store, trajectory_id, state.attempt, None, last_reason, len(state.prefix))
            state = Attempts(state.prefix, state.attempt + 1)
            continue
        new_steps = simulator.parse(result.parsed)
        if settings.dm_evaluation == "world":
            new_steps = ground_steps(script, prefix, new_steps, extra)
        steps = prefix + new_steps
        verdict = await asyncio.to_thread(verify_steps, script, steps, settings.min_corrections, extra)
        save_verdict(store, trajectory_id, state.attempt, verdict, verdict.reason, len(steps))
        if verdict.ok:
            held = (steps, verdict)
            if not settings.injection or verdict.corrections >= target or spend.calls >= settings.budget:
                break
        else:
            last_reason, last_steps = f"{verdict.rule}: {verdict.reason}", steps
        rng = random.Random(f"{settings.seed}:{persona_id}:{state.attempt}")
        following = _next_prefix(script, _base(steps, verdict, settings), target, settings, rng)
        if following is None and verdict.ok:
            break  # verified, and no mistake can be added: keep it
        state = Attempts(following or [], state.attempt + 1)  # None: nothing to add to a finished story, play again
    return held, last_reason, last_steps


def _save_verified(store: Store, base: dict, trajectory_id: str, script: Script, steps: list[dict],
                   verdict: TrajectoryVerdict, spend: Spend, settings: RefineConfig) -> None:  # fmt: skip
    # Where the world came from, so a dataset can keep or drop procedural worlds (script ids: PERSONA:procedural).
    source = "procedural" if str(base.get("script_id") or "").endswith(":procedural") else "llm"
    scaffolded = settings.trajectories == "scaffolded"  # the world plays and judges; the LLM writes the thoughts
    provenance = {"llm_calls": spend.calls, "dm_evaluation": "world" if scaffolded else settings.dm_evaluation,
                  "script_source": source, "trajectory_source": "scaffolded" if scaffolded else "llm"}  # fmt: skip
    dropped = sum(len(s.get("dropped_thought", [])) for s in steps)  # sentences naming another move (scaffold.py)
    if dropped:
        provenance["thought_sentences_dropped"] = dropped
    trajectory = build_trajectory(trajectory_id, script, verdict.checks, provenance)
    save_trajectory(
        store,
        {
            **base,
            "verified": True,
            "reason": None,
            "steps": json.dumps(label_slips(script, steps)),
            **_spend_row(spend),
        },
        trajectory,
    )


def _spend_row(spend: Spend) -> dict[str, Any]:
    return {"llm_calls": spend.calls, "prompt_tokens": spend.prompt_tokens,
            "completion_tokens": spend.completion_tokens, "cost_usd": spend.cost_usd}  # fmt: skip
