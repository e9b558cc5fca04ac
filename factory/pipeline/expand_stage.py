"""The `expand` stage of `factory run`: synthesized multi-hop tasks, written before generation reads them.

    pipeline:
      expand: {depth: 4, width: 3, count: 30, out: outputs/demo/tasks.jsonl}
      generate: [coa]
    coa: {tasks: outputs/demo/tasks.jsonl}      # the coa stage reads what expand wrote
    (and `--corpus geo`, or coa.tools.web_search.local.path, so the agents search the same corpus)

It runs the same `expand` as `factory tasks expand`; its fingerprint covers its settings
(less the closed-book gate's concurrency, cache folder and key variable: ledger.HOW_NOT_WHAT)
and the seed and evaluation files, so a rerun with the same settings skips it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from ..synth.expand import ExpandConfig
from .ledger import without_how

if TYPE_CHECKING:
    from .stages import Context


class ExpandStage(ExpandConfig):
    out: Path = Field(description="the kept tasks (JSONL); point coa.tasks at it")


def run_expand_stage(ctx: Context) -> list[str]:
    from ..synth.expand import expand
    from ..synth.outputs import write_outputs

    stage = ctx.pipeline.expand
    result = expand(ExpandConfig(**stage.model_dump(exclude={"out"})))
    report = write_outputs(result, stage.out)
    return [result.funnel(), f"tasks: {len(result.kept)} -> {stage.out} (verdicts: {report})"]


def expand_inputs(ctx: Context) -> list:
    stage = ctx.pipeline.expand
    files = [path for path in (stage.seeds, *stage.decontaminate) if path is not None]
    return [without_how(stage.model_dump(mode="json"), "pipeline.expand"), *files]
