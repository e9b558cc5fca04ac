"""`--dry-run` on refine, coa, passrate and run: the estimate of what the command would send, printed before (and
instead of) any call. It sends nothing, starts no model server and writes nothing: an existing run store is opened
read-only, so a rerun's estimate is what is left to do."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .context import EstimateContext
from .history import open_existing, recorded_spend
from .model import StageEstimate
from .report import as_json, format_estimates, total_line, totals

if TYPE_CHECKING:
    from ..llm import LLMConfig
    from ..passrate.config import PassrateConfig
    from ..run_config import FactoryConfig


def estimate_stages(
    config: FactoryConfig,
    stages: list[str],
    passrate: tuple[PassrateConfig, LLMConfig] | None = None,
    price_multiplier: float = 1.0,
) -> tuple[list[StageEstimate], list[str]]:
    """The estimate of each stage named (refine, coa, passrate) and the summary lines under them.
    `price_multiplier`: the share of the normal price the calls would cost (a batch API's discount)."""
    from .coa_stage import coa_estimate
    from .passrate_stage import passrate_estimate
    from .refine_stage import refine_estimate

    with open_existing(config.run_dir) as store:
        ctx = EstimateContext(store, price_multiplier)
        estimates = []
        for stage in stages:
            if stage == "refine":
                estimates.append(refine_estimate(ctx, config))
            elif stage == "coa":
                estimates.append(coa_estimate(ctx, config))
            elif stage == "passrate" and passrate is not None:
                estimates.append(passrate_estimate(ctx, *passrate))
        footer = summary_lines(config, estimates, store is not None, recorded_spend(store))
    return estimates, footer


def summary_lines(config: FactoryConfig, estimates: list[StageEstimate], had_store: bool, spent: float) -> list[str]:
    where = f"the run store {config.run_dir}"
    lines = [
        f"dry run: nothing sent, nothing written; {where} "
        + (
            "was read: what is done or answered is not counted, this is what is left"
            if had_store
            else "does not exist yet: a fresh run"
        )
    ]
    if estimates:
        lines.append(total_line(estimates))
    cap = config.llm.max_cost_usd
    if cap is not None and estimates:
        lines.append(cap_line(cap, spent, totals(estimates)[1]))
    return lines


def cap_line(cap: float, spent: float, cost: tuple[float | None, float | None]) -> str:
    head = f"spend cap llm.max_cost_usd ${cap:g} (${spent:.4f} recorded so far): "
    expected, most = cost
    if expected is None:
        return head + "cannot tell, the price is unknown"
    if spent + most <= cap:
        return head + "fits, even at the most"
    if spent + expected <= cap:
        return head + "the expected spend fits, the most does not: the run may stop at the cap (resumable)"
    return head + "does not fit: the run will stop at the cap; raise it to finish (resumable)"


def print_dry_run(
    args: argparse.Namespace, config: FactoryConfig, stages: list[str], passrate=None, extra: list[str] | None = None
) -> int:
    from ..prompts import prompts_override

    with prompts_override(config.prompts_dir):
        estimates, footer = estimate_stages(config, stages, passrate)
    footer = [*(extra or []), *footer]
    print(as_json(estimates, footer) if getattr(args, "json", False) else format_estimates(estimates, footer))
    return 0


def dry_run(args: argparse.Namespace, config: FactoryConfig) -> int:
    """`factory refine|coa|passrate|run ... --dry-run`: the stages the command would run, estimated."""
    if args.command == "passrate":
        from ..passrate.command import passrate_settings
        from ..passrate.config import PassrateConfig

        settings = passrate_settings(args, getattr(config, "passrate", None) or PassrateConfig())
        return print_dry_run(args, config, ["passrate"], (settings, config.llm))
    if args.command == "run":
        return pipeline_dry_run(args, config)
    return print_dry_run(args, config, [args.command])


def pipeline_dry_run(args: argparse.Namespace, config: FactoryConfig) -> int:
    """The generation stages' estimate (the stages after them make no model calls)."""
    from ..errors import FactoryError
    from ..pipeline.stages import all_stages

    if not args.config:
        raise FactoryError("factory run needs a pipeline config: -c pipeline.yaml (e.g. examples/pipeline.yaml)")
    pipeline = config.pipeline
    stages = [*pipeline.generate, *(["passrate"] if pipeline.passrate is not None else [])]
    policy = (pipeline.passrate.policy or config.llm) if pipeline.passrate is not None else None
    later = [s.name for s in all_stages(pipeline) if s.name not in ("refine", "coa", "passrate")]
    note = f"later stages ({', '.join(later)}) make no model calls"
    return print_dry_run(args, config, stages, (config.passrate, policy) if policy else None, [note])
