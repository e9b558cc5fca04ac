"""`factory smoke` and `factory ping`: argument parsers and command functions (wired in factory/cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..cli_options import add_llm_options, sets_config
from ..llm.call_summary import format_call_summary, summarize_calls
from .job import ping, run_smoke

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig


def add_smoke_parsers(commands: argparse._SubParsersAction) -> None:
    smoke = commands.add_parser("smoke", help="generate a few structured responses and summarise the call log")
    add_llm_options(smoke)
    smoke.add_argument("-n", type=int, help="how many responses (default 4)")
    smoke.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    smoke.set_defaults(func=cmd_smoke, takes_run_config=True)
    sets_config(smoke, {"smoke.n": "n"})

    ping_parser = commands.add_parser("ping", help="one structured call to check a model or endpoint")
    add_llm_options(ping_parser)
    ping_parser.set_defaults(func=cmd_ping, run_dir_default="outputs/ping", takes_run_config=True)


def cmd_smoke(args: argparse.Namespace, config: FactoryConfig) -> int:
    outcome = run_smoke(config, progress=not args.quiet)
    for result in outcome.results:
        shown = result.parsed.model_dump_json() if result.ok else f"ERROR {result.error_kind}: {result.error}"
        print(f"[{result.tag}] {shown}")
    print(f"\nrun store: {Path(config.run_dir) / 'factory.sqlite'}")
    print(format_call_summary(summarize_calls(config.run_dir, config.smoke.stage)))
    return 0 if all(r.ok for r in outcome.results) else 1


def cmd_ping(args: argparse.Namespace, config: FactoryConfig) -> int:
    result = ping(config)
    if not result.ok:
        print(f"ping failed ({result.error_kind}) after {result.attempts} attempt(s): {result.error}")
        return 1
    print(
        f"ok in {result.latency_s:.2f}s, {result.prompt_tokens}+{result.completion_tokens} tokens: "
        f"{result.parsed.model_dump_json()}"
    )
    return 0
