"""`factory refine`: sample personas and run the refine loop for each, resumably."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from ..errors import SendingStopped
from ..llm import LLMClient
from ..llm.progress import CallCounter
from ..personas import Persona, load_library, load_personas, sample_personas, save_personas
from ..run import Run, open_run
from ..scale import ray_enabled, shard_subset
from ..store import Store
from .config import RefineConfig
from .pipeline import refine_one
from .slips import learned_counts
from .store import finished_ids, refine_funnel, rule_losses, save_trajectory
from .validation_code import SandboxCodeChecker

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig


@dataclass
class RefineOutcome:
    run_id: str
    funnel: dict[str, int]
    rule_losses: dict[str, int]
    skipped_personas: list[str] = field(
        default_factory=list
    )  # rows too long to be a persona, "file:line (N characters)"


def choose_personas(config: RefineConfig) -> tuple[list[Persona], list[str]]:
    """The sampled personas, and the rows of the file skipped as too long."""
    pool = load_personas(config.personas, field=config.persona_field) if config.personas else load_library()
    return sample_personas(pool, min(config.count, len(pool)), config.seed), list(getattr(pool, "too_long", []))


async def _one(llm: LLMClient, store: Store, persona: Persona, settings: RefineConfig, checker) -> None:
    try:
        await refine_one(llm, store, persona.id, persona.text, settings, checker)
    except SendingStopped:
        raise  # the store cannot keep answers: the batch must stop, not record a failure per persona
    except Exception as exc:  # one persona's bug must not end the batch: record it
        row = {"trajectory_id": f"refine:{persona.id}", "source": "refine", "persona_id": persona.id,
               "verified": False, "reason": f"internal: {type(exc).__name__}: {exc}"}  # fmt: skip
        save_trajectory(store, row, None)


def script_source(config: FactoryConfig) -> str:
    """Who writes the worlds: `auto` means procedural on the embedded model, which cannot
    write a consistent script, and the paper's LLM-written scripts for every other model."""
    if config.refine.scripts != "auto":
        return config.refine.scripts
    return "procedural" if config.llm.model == "local" else "llm"


def trajectory_source(config: FactoryConfig) -> str:
    """Who plays the trajectories: `auto` means scaffolded on the embedded model (it never reached a goal
    playing alone; the world plays and it writes the thoughts), the paper's LLM-played ones otherwise."""
    if config.refine.trajectories != "auto":
        return config.refine.trajectories
    return "scaffolded" if config.llm.model == "local" else "llm"


async def run_refine_async(config: FactoryConfig, progress: bool = True) -> RefineOutcome:
    personas, skipped = choose_personas(config.refine)
    personas = shard_subset(personas, config)  # a Ray shard runs its slice (factory/scale/)
    settings = config.refine.model_copy(
        update={"scripts": script_source(config), "trajectories": trajectory_source(config)}
    )
    checker = SandboxCodeChecker() if settings.with_code else None
    with open_run(config.run_dir, "refine", config) as run:
        save_personas(run.store, personas)
        settings = settings.with_slip_counts(learned_counts(run.store))  # what earlier batches' LLM got wrong
        done = finished_ids(run.store)
        todo = [p for p in personas if f"refine:{p.id}" not in done]
        async with LLMClient(config.llm, run.store, run.run_id) as llm:
            tasks = [asyncio.ensure_future(_one(llm, run.store, p, settings, checker)) for p in todo]
            bar = tqdm(total=len(tasks), desc="refine", unit="persona", disable=not progress)
            with bar, CallCounter([llm], bar):  # the postfix: errors, tokens and spend so far
                for finished in asyncio.as_completed(tasks):
                    await finished
                    bar.update(1)
        return RefineOutcome(run.run_id, refine_funnel(run.store), rule_losses(run.store), skipped)


def run_refine(config: FactoryConfig, progress: bool = True) -> RefineOutcome:
    if ray_enabled(config):
        return run_refine_on_ray(config, progress)
    return asyncio.run(run_refine_async(config, progress))


def refine_shard(config: FactoryConfig) -> dict[str, int]:
    """One shard's work, in its Ray worker (the funnel is read again from the merged store)."""
    return run_refine(config, progress=False).funnel


def run_refine_on_ray(config: FactoryConfig, progress: bool) -> RefineOutcome:
    """The personas sharded by id over Ray workers; the outcome read from the merged store."""
    from ..scale.sharded import run_on_ray

    def finish(config: FactoryConfig, run: Run, results: list[dict]) -> RefineOutcome:
        skipped = choose_personas(config.refine)[1]
        return RefineOutcome(run.run_id, refine_funnel(run.store), rule_losses(run.store), skipped)

    return run_on_ray(config, "refine", "persona id", refine_shard, (), finish, progress)
