"""The refine stage's estimate. Each persona's first request is rendered with the stage's own builders: the script
writer's prompt (scripts: llm), or, with `scripts: procedural` (no script call), the first trajectory or thoughts
request on the persona's procedural world (a world with no plan sends nothing, as in the run). Later calls depend
on replies not written yet: they are priced at a first request's size (on the shipped example script where the
world is the LLM's to write); a continuation also shows the verified steps, so they run somewhat longer.

Calls per persona: at most `refine.budget`, the script included; expected: the store's own means over finished
personas, else 1 script call plus 2 trajectory calls with injection (the LLM plays, then continues after the
injected mistakes) or 1 without, and 1 thoughts call when scaffolded.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from ..prompts import prompt_file, prompts_from
from ..refine.batch import choose_personas, script_source, trajectory_source
from ..refine.config import RefineConfig
from ..refine.inject import draw_target
from ..refine.procedural import build_script
from ..refine.roles import ScriptWriter, ThoughtWriter, TrajectorySimulator
from ..refine.scaffold import planned_steps, with_mistakes
from ..refine.script import Script
from ..refine.solvable import solvability_problems
from .context import EstimateContext
from .history import query
from .model import Part, Span, StageEstimate

if TYPE_CHECKING:
    from ..llm import LLMConfig, Request
    from ..personas import Persona
    from ..run_config import FactoryConfig


def refine_estimate(ctx: EstimateContext, config: FactoryConfig) -> StageEstimate:
    settings = config.refine.model_copy(
        update={"scripts": script_source(config), "trajectories": trajectory_source(config)}
    )
    personas, _ = choose_personas(settings)
    done = {row[0] for row in query(ctx.store, "SELECT trajectory_id FROM trajectories WHERE source = 'refine'")}
    todo = [p for p in personas if f"refine:{p.id}" not in done]
    llm, counter = config.llm, ctx.counter(config.llm.model)
    with prompts_from(config):
        firsts = [r for r in first_requests(settings, todo) if r is not None]
        later = first_play_request(_example_script(), settings) if settings.scripts == "llm" else None
    sizes = [counter.count(r.messages) for r in firsts]
    fresh = [size for size, r in zip(sizes, firsts) if not ctx.answered(llm, r)]
    per = _calls_per_persona(ctx, settings)
    parts, notes = _parts(ctx, llm, settings, sizes, fresh, counter.count(later.messages) if later else None, per)
    notes = [
        _settings_line(settings, len(todo), len(done)),
        *notes,
        f"requests per persona: expected {per['script'] + per['play']:.1f} ({per['source']}); at most "
        f"refine.budget {settings.budget} in all, the script's included",
    ]
    if len(todo) > len(firsts):
        notes.append(f"{len(todo) - len(firsts)} procedural worlds have no plan: those personas send nothing")
    if len(firsts) > len(fresh):
        notes.append(f"{len(firsts) - len(fresh)} first requests already answered in the call log (not counted)")
    return StageEstimate("refine", llm.model, len(todo), "persona", len(done), counter.method, ctx.pricing(llm),
                         parts, notes, most_requests=len(firsts) * settings.budget)  # fmt: skip


def first_requests(settings: RefineConfig, personas: list[Persona]) -> list[Request | None]:
    """Each persona's first request as the run builds it; None where the run would send none."""
    if settings.scripts == "llm":
        writer = ScriptWriter(with_code=settings.with_code)
        return [writer.request(p.id, p.text, 0) for p in personas]
    requests = []
    for persona in personas:
        script = build_script(persona.id, persona.text, settings.seed)
        solvable = not solvability_problems(script, require_goal=True)
        requests.append(first_play_request(script, settings, persona.id) if solvable else None)
    return requests


def first_play_request(script: Script, settings: RefineConfig, persona_id: str = "example") -> Request | None:
    """The first trajectory request on `script`: the LLM playing it, or (scaffolded) writing the thoughts of the
    world's plan with its drawn mistakes, as refine/pipeline.py and scaffold.py build it (None: no plan)."""
    trajectory_id = f"refine:{persona_id}"
    if settings.trajectories != "scaffolded":
        simulator = TrajectorySimulator(settings.min_corrections, max_steps=settings.max_steps)
        return simulator.request(script, [], 0, trajectory_id)
    plan = planned_steps(script)
    if plan is None:
        return None
    target = draw_target(
        settings.mistake_counts, settings.min_corrections, random.Random(f"{settings.seed}:{persona_id}:mistakes")
    )
    steps = with_mistakes(script, plan, target, settings, random.Random(f"{settings.seed}:{persona_id}:0"))
    return ThoughtWriter().request(script, steps, 0, trajectory_id)


def _parts(ctx: EstimateContext, llm: LLMConfig, settings: RefineConfig, sizes: list[int], fresh: list[int],
           later: int | None, per: dict) -> tuple[list[Part], list[str]]:  # fmt: skip
    """The script part (LLM-written worlds) and the trajectory or thoughts part, with their completion notes."""
    n, each = len(sizes), sum(sizes) / max(len(sizes), 1)
    play = "thoughts" if settings.trajectories == "scaffolded" else "trajectory"
    if settings.scripts != "llm":  # the first request is the first play call
        calls = Span(len(fresh) + n * (per["play"] - 1), n * settings.budget)
        return _with_completion(ctx, llm, play, calls, Span(sum(fresh), 0) + calls_after(calls, len(fresh), each))
    tries = min(settings.script_tries, settings.budget)
    calls = Span(len(fresh) + n * (per["script"] - 1), n * tries)
    script, script_note = _with_completion(
        ctx, llm, "script", calls, Span(sum(fresh), 0) + calls_after(calls, len(fresh), each)
    )
    calls = Span(n * per["play"], n * (settings.budget - 1))
    played, play_note = _with_completion(ctx, llm, play, calls, calls.times(later or 0))
    return [*script, *played], [*script_note, *play_note]


def calls_after(calls: Span, firsts: int, each: float) -> Span:
    """The prompt tokens of the calls past the rendered first ones, each priced at `each` (the most: all calls)."""
    return Span(max(calls.expected - firsts, 0) * each, calls.most * each)


def _with_completion(
    ctx: EstimateContext, llm: LLMConfig, name: str, calls: Span, prompts: Span
) -> tuple[list[Part], list[str]]:
    stage = "script" if name == "script" else "trajectory"  # the call log's stage names (thoughts: trajectory)
    per_call, source = ctx.completion(llm.model, stage, name, llm.max_tokens)
    part = Part(name, calls, prompts, Span(calls.expected * per_call, calls.most * llm.max_tokens), ctx.pricing(llm))
    return [part], [
        f"{name} completion tokens: expected {per_call:.0f} per call ({source}); most: max_tokens {llm.max_tokens}"
    ]


def _example_script() -> Script:
    """The first of the script writer's shipped examples: a representative world for the trajectory prompts."""
    example = json.loads(prompt_file("refine/script_examples.json").read_text())[0]
    return Script(persona_id="example", **example)


def _calls_per_persona(ctx: EstimateContext, settings: RefineConfig) -> dict:
    """Expected script and play calls per persona: the store's means over finished personas, else the defaults."""
    scripts = 0.0 if settings.scripts == "procedural" else 1.0
    seen = query(
        ctx.store, "SELECT avg(llm_calls), count(*) FROM trajectories WHERE source = 'refine' AND llm_calls IS NOT NULL"
    )
    if seen and seen[0][1]:
        if scripts:
            tries = query(
                ctx.store,
                "SELECT count(*) / count(DISTINCT persona_id) FROM scripts WHERE script_id NOT LIKE '%:procedural'",
            )
            scripts = float(tries[0][0]) if tries and tries[0][0] else 1.0
        total = float(seen[0][0])
        return {"script": scripts, "play": max(total - scripts, 0.0), "source": f"mean of {seen[0][1]} finished"}
    play = 1.0 if settings.trajectories == "scaffolded" or not settings.injection else 2.0
    return {"script": scripts, "play": play, "source": "default"}


def _settings_line(settings: RefineConfig, todo: int, done: int) -> str:
    scripts = "scripts: procedural (no script call)" if settings.scripts == "procedural" else "scripts: llm"
    return (
        f"{todo} personas to do ({done} finished before); {scripts}; trajectories: {settings.trajectories}; "
        f"injection {'on' if settings.injection else 'off'}"
    )
