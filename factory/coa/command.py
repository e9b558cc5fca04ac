"""`factory coa` and `factory coa-import`: argument parsers and command functions (wired in factory/cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..cli_options import add_dry_run_options, add_llm_options, add_run_folder, run_folder_and_file, sets_config
from ..corpus.search import with_corpus_search
from ..failures import format_failures, funnel_line
from ..llm.call_summary import format_call_summary, summarize_calls
from ..scale.options import add_ray_options
from .batch import run_coa, run_coa_import

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig


def add_coa_parsers(commands: argparse._SubParsersAction) -> None:
    coa = commands.add_parser("coa", help="Chain-of-Agents path: tasks -> multi-agent runs -> AFM trajectories")
    add_llm_options(coa)
    coa.add_argument("--tasks", help="JSONL/parquet task file or saved dataset (verl/AFM rows work as they are)")
    coa.add_argument("--count", type=int, help="tasks to sample (one run each)")
    coa.add_argument("--seed", type=int, help="sampling seed")
    coa.add_argument("--domain", choices=["qa", "math", "code"], help="keep only tasks of this domain")
    coa.add_argument("--variant", choices=["auto", "mas", "code"], help="web agents, the code agent, or by domain")
    coa.add_argument("--max-steps", type=int, help="tool calls per task")
    coa.add_argument("--corpus", help="JSONL/parquet corpus (id, title, text) for the local web_search backend")
    add_dry_run_options(coa)
    add_ray_options(coa)
    coa.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    coa.set_defaults(func=cmd_coa, run_dir_default="outputs/coa", takes_run_config=True)
    named = ("tasks", "count", "seed", "domain", "variant", "max_steps")
    sets_config(coa, {f"coa.{name}": name for name in named}, finish=with_corpus_search)

    coa_import = commands.add_parser(
        "coa-import",
        help="distil agent logs you already have into AFM trajectories",
        usage="%(prog)s RUN_DIR FILE [options]",
    )
    add_run_folder(coa_import, "the run folder to distil into (made if missing)", required=True,
                   usage="factory coa-import RUN_DIR FILE")  # fmt: skip
    coa_import.add_argument("path", metavar="FILE", nargs="?",  # one word alone: the old `coa-import FILE`
                            help="JSONL of OpenAI tool-calling conversations or smolagents step memory")  # fmt: skip
    coa_import.add_argument(
        "--variant",
        choices=["mas", "code"],
        default="mas",
        help="distil as the web-agent (mas, default) or the code-agent trajectory format",
    )
    coa_import.add_argument(
        "--format",
        choices=["auto", "openai", "smolagents"],
        default="auto",
        help="the log's format (default auto: a record with chat messages is openai, any other smolagents)",
    )
    coa_import.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    coa_import.set_defaults(func=cmd_coa_import)


def cmd_coa(args: argparse.Namespace, config: FactoryConfig) -> int:
    return print_coa(run_coa(config, progress=not args.quiet), config.run_dir)


def cmd_coa_import(args: argparse.Namespace) -> int:
    run_dir, path = run_folder_and_file(args, "outputs/coa-import")
    outcome = run_coa_import(run_dir, path, variant=args.variant, fmt=args.format, progress=not args.quiet)
    return print_coa(outcome, run_dir)


def print_coa(outcome, run_dir) -> int:
    print(funnel_line(outcome.funnel))
    print(format_failures(run_dir, ["coa"]))
    print(f"run store: {Path(run_dir) / 'factory.sqlite'}  (factory show {run_dir} ID)")
    print(format_call_summary(summarize_calls(run_dir)))
    return 0
