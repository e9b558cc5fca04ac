"""`factory pairs RUN_DIR [--model M] [--tasks FILE]`: AutoCoA's "when to act" pairs, and a one-screen summary.

factory/cli.py wires it in with `add_pairs_parser(commands)` and hands `cmd_pairs` the run config (the -c
file with the LLM flags on top); the pairs flags then override its `pairs:` section when it has one.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cli_options import add_llm_options, flag_names, flag_overrides, with_overrides
from ...llm.call_summary import format_call_summary, summarize_calls
from .config import PairsConfig
from .job import PairsOutcome, make_pairs
from .recall import STAGE
from .rule import KINDS

if TYPE_CHECKING:
    from ...run_config import FactoryConfig

DEFAULT_RUN = "outputs/coa"  # where `factory coa` writes when given no folder: the trajectories paired here
# PairsConfig field -> the argparse dest of its flag
FLAGS = {"tasks": "tasks", "rollouts_model": "rollouts_model", "min_pass_rate": "min_pass_rate",
         "min_rollouts": "min_rollouts", "checker": "checker"}  # fmt: skip


def add_pairs_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "pairs", help='AutoCoA stage 1: "when to act" preference pairs from the coa trajectories of a run'
    )
    add_llm_options(parser)  # --model: the model asked for the answer from recall
    for action in parser._actions:  # the coa run's folder, not one of its own
        if action.metavar == "RUN_DIR":
            action.help = f"the coa run folder (default: run_dir in the -c config, else {DEFAULT_RUN})"
    parser.add_argument(
        "--tasks",
        action="append",
        help="a task file with the references (repeatable; default: the coa.tasks and passrate.tasks the run recorded)",
    )
    parser.add_argument(
        "--rollouts-model",
        help="the rollouts label of the closed-book pass rates (default: the one label the run holds, else --model)",
    )
    parser.add_argument(
        "--min-pass-rate", type=float, help="closed-book pass rate a when_not_to_act pair needs (default 0.8)"
    )
    parser.add_argument("--min-rollouts", type=int, help="judged closed-book rollouts it needs (default 8)")
    parser.add_argument("--checker", help="a checker name instead of coa.checker or the domain default")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=cmd_pairs, run_dir_default=DEFAULT_RUN, takes_run_config=True)
    return parser


def cmd_pairs(args: argparse.Namespace, config: FactoryConfig) -> int:
    settings = pairs_settings(args, getattr(config, "pairs", None) or PairsConfig())
    outcome = make_pairs(config, settings, progress=not args.quiet)
    print(format_pairs(outcome, settings))
    print(f"run store: {Path(config.run_dir) / 'factory.sqlite'}  (table preference_pairs)")
    print(format_call_summary(summarize_calls(config.run_dir, STAGE)))
    return 0


def pairs_settings(args: argparse.Namespace, base: PairsConfig) -> PairsConfig:
    return with_overrides(base, flag_overrides(args, FLAGS), flags=flag_names(FLAGS))


def format_pairs(outcome: PairsOutcome, settings: PairsConfig, top: int = 8) -> str:
    made = ", ".join(f"{kind} {outcome.made.get(kind, 0)}" for kind in KINDS)
    stored = ", ".join(f"{kind} {outcome.stored.get(kind, 0)}" for kind in KINDS)
    lines = [
        f"pairs from {outcome.trajectories} verified coa trajectories; recall model {outcome.model}; closed-book "
        f"evidence: rollouts of '{outcome.rollouts_model}', pass rate >= {settings.min_pass_rate:g} over >= "
        f"{settings.min_rollouts} judged",
        f"pairs by kind: {made} (in the table for this model: {stored})",
        f"left out: {sum(outcome.left_out.values())}",
    ]
    for reason, count in outcome.left_out.most_common(top):
        lines.append(f"  {count:>4} × {reason}  [{outcome.examples[reason][:150]}]")
    return "\n".join(lines)
