"""`factory passrate RUN_DIR --tasks FILE --model M --n 32 [--base-url URL]`: rollouts and pass rates.

factory/cli.py wires it in with `add_passrate_parser(commands)` and hands `cmd_passrate` the run
config (the -c file with the LLM options of factory/cli_options.py on top); the pass-rate
flags then override its `passrate:` section.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cli_options import add_dry_run_options, add_llm_options, flag_names, flag_overrides, with_overrides
from ..llm.call_summary import format_call_summary, summarize_calls
from ..scale.options import add_ray_options
from .config import PassrateConfig
from .job import format_passrate, run_passrate
from .sampler import STAGE

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig

# PassrateConfig field -> the argparse dest of its flag
FLAGS = {"tasks": "tasks", "count": "count", "seed": "seed", "domain": "domain", "n": "samples",
         "temperature": "temperature", "max_tokens": "max_tokens", "label": "label", "checker": "checker",
         "threshold": "threshold"}  # fmt: skip


def add_passrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("passrate", help="sample N rollouts per task from a policy model; pass rates for RL")
    add_llm_options(parser)  # and RUN_DIR (default: the config's run_dir, else outputs/passrate)
    parser.add_argument("--tasks", help="JSONL/parquet task file or saved dataset (verl/AFM rows work as they are)")
    parser.add_argument("--count", type=int, help="tasks to sample from the file (default: all)")
    parser.add_argument("--seed", type=int, help="task sampling seed")
    parser.add_argument("--domain", choices=["qa", "math", "code"], help="keep only tasks of this domain")
    parser.add_argument("-n", "--n", dest="samples", type=int, help="rollouts per task (default 32)")
    parser.add_argument("--temperature", type=float, help="policy sampling temperature (default 1.0)")
    parser.add_argument("--max-tokens", type=int, help="tokens per rollout (default 4096)")
    parser.add_argument("--label", help="model name recorded in the rollouts table (default: --model)")
    parser.add_argument("--checker", help="a checker name instead of the domain default (exact_match, f1, ...)")
    parser.add_argument("--threshold", type=float, help="pass rate at or below which a task is kept (default 0.3)")
    parser.add_argument("--no-retry-failures", action="store_true", help="leave samples whose request failed")
    add_dry_run_options(parser)
    add_ray_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=cmd_passrate, run_dir_default="outputs/passrate", takes_run_config=True)
    return parser


def cmd_passrate(args: argparse.Namespace, config: FactoryConfig) -> int:
    settings = passrate_settings(args, getattr(config, "passrate", None) or PassrateConfig())
    outcome, summary = run_passrate(config, settings, config.llm, progress=not args.quiet)
    print(format_passrate(outcome, summary))
    print(f"run store: {Path(config.run_dir) / 'factory.sqlite'}  (table rollouts)")
    print(format_call_summary(summarize_calls(config.run_dir, STAGE)))
    return 0


def passrate_settings(args: argparse.Namespace, base: PassrateConfig) -> PassrateConfig:
    overrides = flag_overrides(args, FLAGS)
    if getattr(args, "no_retry_failures", False):
        overrides["retry_failures"] = False
    flags = flag_names(FLAGS) | {"n": "-n", "retry_failures": "--no-retry-failures"}
    return with_overrides(base, overrides, flags=flags)
