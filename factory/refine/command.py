"""`factory refine`: argument parser and command function (wired in factory/cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..cli_options import add_dry_run_options, add_llm_options, sets_config
from ..failures import format_failures, funnel_line
from ..llm.call_summary import format_call_summary, summarize_calls
from ..scale.options import add_ray_options

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig


def add_refine_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    refine = commands.add_parser("refine", help="AgentRefine path: personas -> scripts -> verified trajectories")
    add_llm_options(refine)
    refine.add_argument("--count", type=int, help="personas to sample (one trajectory each)")
    refine.add_argument("--seed", type=int, help="sampling and injection seed")
    refine.add_argument(
        "--personas",
        help="JSONL/CSV/parquet file or saved dataset whose 'persona' (or 'input "
        "persona') column holds the text (default: the shipped library)",
    )
    refine.add_argument("--persona-field", help="the column of --personas holding the persona text")
    refine.add_argument("--min-corrections", type=int, help="corrected mistakes required (default 2)")
    refine.add_argument("--budget", type=int, help="LLM calls per trajectory, script included (default 4)")
    refine.add_argument("--no-code", action="store_true", help="declarative rules only, no validation code")
    refine.add_argument("--no-injection", action="store_true", help="rely on the prompt alone for mistakes")
    refine.add_argument(
        "--dm",
        choices=["llm", "world"],
        help="who judges actions: the LLM as DM (default, the paper) or the script's world",
    )
    refine.add_argument(
        "--scripts",
        choices=["auto", "llm", "procedural"],
        help="who writes the worlds: the LLM (the paper), a seeded procedural builder, or auto "
        "(default: procedural for the embedded 'local' model, the LLM otherwise)",
    )
    refine.add_argument(
        "--trajectories",
        choices=["auto", "llm", "scaffolded"],
        help="who plays the trajectories: the LLM (the paper), scaffolded (the world's plan fixes "
        "the actions, the LLM writes the thoughts), or auto (default: scaffolded for 'local')",
    )
    add_dry_run_options(refine)
    add_ray_options(refine)
    refine.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    refine.set_defaults(func=cmd_refine, run_dir_default="outputs/refine", takes_run_config=True)
    named = ("count", "seed", "personas", "persona_field", "min_corrections", "budget", "scripts", "trajectories")
    fields = {f"refine.{name}": name for name in named} | {"refine.dm_evaluation": "dm"}
    switches = {"refine.with_code": ("no_code", False), "refine.injection": ("no_injection", False)}
    sets_config(refine, fields, switches)
    return refine


def cmd_refine(args: argparse.Namespace, config: FactoryConfig) -> int:
    from ..store import Store
    from .batch import run_refine
    from .quality import format_quality, run_quality
    from .quality_rows import format_row_quality, row_quality

    outcome = run_refine(config, progress=not args.quiet)
    print(funnel_line(outcome.funnel))
    print(format_failures(config.run_dir, ["refine"]))
    if outcome.skipped_personas:
        print(
            f"personas skipped (too long to be a persona): {len(outcome.skipped_personas)}; "
            f"first: {outcome.skipped_personas[0]}"
        )
    print(f"run store: {Path(config.run_dir) / 'factory.sqlite'}  (factory show {config.run_dir} ID)")
    print(format_call_summary(summarize_calls(config.run_dir)))
    print(format_quality(run_quality(config.run_dir)))  # issue 13: the data's quality, not only its yield
    with Store.open(config.run_dir, read_only=True) as store:  # issue 26: what only a look inside each row shows
        print(format_row_quality(row_quality(store)))
    return 0
