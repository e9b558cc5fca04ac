"""The refine stage's estimate. Each persona's first request is rendered with the stage's own builders: the script
writer's prompt (scripts: llm), or, with `scripts: procedural` (no script call), the first trajectory or thoughts
request on the persona's procedural world. Later calls depend on replies not written yet: they are priced at a
first trajectory request's size (on the shipped example script where the world is the LLM's to write).

Calls per persona: at most `refine.budget`, the script included; expected: the store's own mean over finished
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
from .context import EstimateContext
from .history import query
from .model import Part, Span, StageEstimate
from .pricing import pricing_for

if TYPE_CHECKING:
    from ..llm import Request
    from ..run_config import FactoryConfig


def refine_estimate(ctx: EstimateContext, config: FactoryConfig) -> StageEstimate:
    settings = config.refine.model_copy(
        update={"scripts": script_source(config), "trajectories": trajectory_source(config)}
    )
    personas, _ = choose_personas(settings)
    done = {row[0] for row in query(ctx.store, "SELECT trajectory_id FROM trajectories WHERE source = 'refine'")}
    todo = [p for p in personas if f"refine:{p.id}" not in done]
    llm, counter = config.llm, ctx.counter(config.llm.model)
    play = "thoughts" if settings.trajectories == "scaffolded" else "trajectory"
    with prompts_from(config):
        if settings.scripts == "llm":
            writer = ScriptWriter(with_code=settings.with_code)
            firsts = [writer.request(p.id, p.text, 0) for p in todo]
            later = first_play_request(_example_script(), settings)
        else:
            firsts = [first_play_request(build_script(p.id, p.text, settings.seed), settings, p.id) for p in todo]
            later = None
    fresh = [r for r in firsts if not ctx.answered(llm, r)]
    first_tokens = sum(counter.count(r.messages) for r in fresh)
    play_tokens = counter.count(later.messages) if later else first_tokens / max(len(fresh), 1)
    per_persona = _calls_per_persona(ctx, settings)
    n, sent_firsts = len(todo), len(fresh)
    parts, notes = [], [_settings_line(settings, n, len(done))]
    if settings.scripts == "llm":
        tries = min(settings.script_tries, settings.budget)
        script_calls = Span(sent_firsts + n * (per_persona["script"] - 1), n * tries)
        each = first_tokens / max(sent_firsts, 1)
        prompts = Span(first_tokens + n * (per_persona["script"] - 1) * each, n * tries * each)
        parts.append(_part(ctx, llm, "script", script_calls, prompts, "script", "script"))
        play_calls = Span(n * per_persona["play"], n * (settings.budget - 1))
    else:
        play_calls = Span(sent_firsts + n * (per_persona["play"] - 1), n * settings.budget)
    parts.append(_part(ctx, llm, play, play_calls, play_calls.times(play_tokens), "trajectory", play))
    notes += [f"{line} ({part.name})" for part, line in zip(parts, ctx.notes)]
    notes.append(f"requests per persona: expected {per_persona['script'] + per_persona['play']:.1f} ({per_persona['source']}); at most "
                 f"refine.budget {settings.budget} in all, the script's included")  # fmt: skip
    if n - sent_firsts:
        notes.append(f"{n - sent_firsts} first requests already answered in the call log (not counted)")
    ctx.notes.clear()
    return StageEstimate("refine", llm.model, n, "persona", len(done), counter.method, pricing_for(llm), parts,
                         notes, most_requests=n * settings.budget)  # fmt: skip


def first_play_request(script: Script, settings: RefineConfig, persona_id: str = "example") -> Request:
    """The first trajectory request on `script`: the LLM playing it, or (scaffolded) writing the thoughts of the
    world's plan with its drawn mistakes, as refine/pipeline.py and scaffold.py build it."""
    trajectory_id = f"refine:{persona_id}"
    if settings.trajectories != "scaffolded":
        return TrajectorySimulator(settings.min_corrections, max_steps=settings.max_steps).request(
            script, [], 0, trajectory_id
        )
    plan = planned_steps(script) or []
    target = draw_target(
        settings.mistake_counts, settings.min_corrections, random.Random(f"{settings.seed}:{persona_id}:mistakes")
    )
    steps = with_mistakes(script, plan, target, settings, random.Random(f"{settings.seed}:{persona_id}:0"))
    return ThoughtWriter().request(script, steps, 0, trajectory_id)


def _example_script() -> Script:
    """The first of the script writer's shipped examples: a representative world for the trajectory prompts."""
    example = json.loads(prompt_file("refine/script_examples.json").read_text())[0]
    return Script(persona_id="example", **example)


def _calls_per_persona(ctx: EstimateContext, settings: RefineConfig) -> dict:
    scripts = 1.0 if settings.scripts == "llm" else 0.0
    seen = query(ctx.store, "SELECT avg(llm_calls), count(*) FROM trajectories WHERE source = 'refine' "
                 "AND llm_calls IS NOT NULL")  # fmt: skip
    if seen and seen[0][1]:
        total = float(seen[0][0])
        return {"script": scripts, "play": max(total - scripts, 0.0), "source": f"mean of {seen[0][1]} finished"}
    play = 1.0 if settings.trajectories == "scaffolded" or not settings.injection else 2.0
    return {"script": scripts, "play": play, "source": "default"}


def _part(ctx: EstimateContext, llm, name: str, calls: Span, prompts: Span, stage: str, kind: str) -> Part:
    per_call, source = ctx.completion(llm.model, stage, kind, llm.max_tokens)
    ctx.notes.append(
        f"completion tokens: expected {per_call:.0f} per call ({source}); most: max_tokens {llm.max_tokens}"
    )
    completion = Span(calls.expected * per_call, calls.most * llm.max_tokens)
    return Part(name, calls, prompts, completion, pricing_for(llm))


def _settings_line(settings: RefineConfig, todo: int, done: int) -> str:
    scripts = "scripts: procedural (no script call)" if settings.scripts == "procedural" else "scripts: llm"
    return (f"{todo} personas to do ({done} finished before); {scripts}; trajectories: {settings.trajectories}; "
            f"injection {'on' if settings.injection else 'off'}")  # fmt: skip
