"""The scaffolded trajectory source for small models (`refine.trajectories: scaffolded`).

Why: SmolLM2-135M, asked to play a whole trajectory, writes one or two steps a
call, repeats a move and never reached the goal within the budget of 4 calls
(every row `not_done`). Here the world plays and the model writes what it can:
the world's breadth-first shortest plan (solvable.py) gives each correct move,
error injection (inject.py) puts mistakes at drawn positions, each followed by
the planned move that corrects it, the world's step function gives every DM
line (grounding.py), and the model writes the player's thought for every step,
all in one call, under a schema that fixes each action and observation
(`const`, schemas.scaffold_schema). A thought that names another move than
its fixed action ("I take the laptop" over `take(item=textbook)`, thought_actions.py)
is re-asked once for the same moves, a `thought_action` verdict; then each step
keeps whichever of its two thoughts agrees, else loses its clashing sentences
(kept under the step's `dropped_thought`, counted in the row's provenance). The verifier runs unchanged. Rows carry
`trajectory_source: scaffolded` in their provenance, so a dataset can keep or
drop them; capable models keep the paper's LLM-played trajectories.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from ..llm import LLMClient
from ..store import Store
from .config import RefineConfig
from .grounding import accepted_feedback
from .inject import draw_target, inject_mistakes
from .roles import ThoughtWriter
from .script import Script
from .slips import SlipMix
from .solvable import shortest_plan
from .store import save_verdict
from .thought_actions import RULE as CLASH_RULE
from .thought_actions import Clash, step_clashes, without_clashes
from .verify import TrajectoryVerdict, verify_steps
from .world import ExtraCheck, WorldState
from .world import step as world_step

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def planned_steps(script: Script, extra: ExtraCheck | None = None) -> list[dict[str, Any]] | None:
    """The shortest plan as steps the world judged, thoughts still empty; None when there is none
    (no declared goal, none reachable, or validation code refuses a move the rules allow)."""
    plan = shortest_plan(script)
    if not plan:
        return None
    state, steps = WorldState.initial(script), []
    for name, params in plan:
        moved = world_step(script, state, name, params, extra)
        if not moved.check.ok:
            return None
        typed = moved.check.params or params  # the values in their declared types, as a player sends them
        told = accepted_feedback(script, state, moved.after, name, typed, bool(moved.done))
        state = moved.after
        steps.append(
            {
                "thought": "",
                "action": {"name": name, "params": typed},
                **told,
                "evaluation": {"error": "none", "task_done": bool(moved.done)},
            }
        )
    return steps


def with_mistakes(
    script: Script, plan: list[dict], target: int, settings: RefineConfig, rng: random.Random
) -> list[dict]:
    """The plan with mistakes injected at drawn positions, each followed by the planned move that corrects it."""
    if not settings.injection:
        return plan
    prefix = inject_mistakes(script, plan, target, SlipMix.of(settings), settings.first_move_mistakes, rng)
    if prefix is None:
        return plan
    kept = sum(1 for s in prefix if not s.get("injected"))  # plan steps already in the prefix, in order
    # The world's refusal stays the DM's line here: the scaffold's one call writes thoughts only.
    return [{k: v for k, v in s.items() if k not in ("open_thought", "open_observation")} for s in prefix + plan[kept:]]


def tidy_thought(text: str) -> str:
    """A thought cut to whole sentences, each said once: the length bound cuts a small model's thought
    mid-word, and it repeats itself. A thought of one unfinished sentence keeps it, with a full stop."""
    sentences = [s.strip() for s in SENTENCE_END.split(" ".join(str(text).split())) if s.strip()]
    if len(sentences) > 1 and not sentences[-1].endswith((".", "!", "?")):
        sentences = sentences[:-1]
    kept = [s for i, s in enumerate(sentences) if s.lower() not in {t.lower() for t in sentences[:i]}]
    joined = " ".join(kept).rstrip(" ,;:-")
    return joined + "." if joined and not joined.endswith((".", "!", "?")) else joined


def with_thoughts(steps: list[dict], thoughts: list[str]) -> list[dict] | None:
    """The steps with the model's thoughts; None when one is missing or blank, or when most say the
    same thing (SmolLM2 can write one sentence for every step: nothing a trainee could learn from)."""
    cleaned = [tidy_thought(t) for t in thoughts]
    if len(cleaned) != len(steps) or not all(cleaned) or 2 * len({t.lower() for t in cleaned}) < len(cleaned):
        return None
    return [{**s, "thought": t} for s, t in zip(steps, cleaned)]


def clash_verdict(clashing: list[Clash], said: str) -> TrajectoryVerdict:
    """The verdict of an attempt whose thought names another move than its action (thought_actions.py)."""
    return TrajectoryVerdict(False, CLASH_RULE, clashing[0].step, said)


async def scaffold_trajectory(llm: LLMClient, store: Store, trajectory_id: str, persona_id: str, script: Script,
                              settings: RefineConfig, extra: ExtraCheck | None, spend) -> tuple[tuple[list[dict], TrajectoryVerdict] | None, str]:  # fmt: skip
    """A verified scaffolded trajectory (steps, verdict) within the budget, or None and the last failure."""
    plan = planned_steps(script, extra)
    if plan is None:
        return None, "no plan: the world's search finds no sequence of valid actions to the goal"
    writer = ThoughtWriter()
    target = draw_target(
        settings.mistake_counts, settings.min_corrections, random.Random(f"{settings.seed}:{persona_id}:mistakes")
    )
    reason, attempt, earlier, reasked = "budget exhausted before any trajectory", 0, None, False
    while spend.calls < settings.budget:
        steps = (
            [{**s, "thought": ""} for s in earlier]  # the re-ask: the same moves, new thoughts
            if earlier
            else with_mistakes(script, plan, target, settings, random.Random(f"{settings.seed}:{persona_id}:{attempt}"))
        )
        result = await llm.run(writer.request(script, steps, attempt, trajectory_id))
        spend.add(result)
        filled = (with_thoughts(steps, writer.parse(result.parsed)) if result.ok else None) or earlier
        clashing = step_clashes(script, filled) if filled else []
        if clashing and not reasked and spend.calls < settings.budget:  # re-ask once while the budget allows
            reasked, earlier, said = True, filled, clashing[0].text()
            save_verdict(store, trajectory_id, attempt, clash_verdict(clashing, said), said, len(steps))
            reason = f"{CLASH_RULE}: {said}"
            attempt += 1
            continue
        if clashing:  # else, step by step, the thought of the two that agrees, or the clashing sentences go
            filled = without_clashes(script, filled, earlier)
        earlier = None
        if filled is None and clashing:
            said = f"nothing left of a thought but its clash: {clashing[0].text()}"
            save_verdict(store, trajectory_id, attempt, clash_verdict(clashing, said), said, len(steps))
            reason = f"{CLASH_RULE}: {said}"
        elif filled is None:
            reason = (
                f"llm {result.error_kind}: {result.error}"
                if not result.ok
                else "format: a thought left blank, or most thoughts alike"
            )
            save_verdict(store, trajectory_id, attempt, None, reason, len(steps))
        else:
            verdict = await asyncio.to_thread(verify_steps, script, filled, settings.min_corrections, extra)
            save_verdict(store, trajectory_id, attempt, verdict, verdict.reason, len(filled))
            if verdict.ok:
                return (filled, verdict), ""
            reason = f"{verdict.rule}: {verdict.reason}"
        attempt += 1
    return None, reason
