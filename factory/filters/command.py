"""`factory filter RUN_DIR --config filters.yaml`: apply the filters, print the funnel."""

from __future__ import annotations

import argparse

from .funnel import format_funnel
from .runner import run_filters


def add_filter_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("filter", help="judge a run's trajectories with declarative SQL filters")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run folder holding factory.sqlite")
    parser.add_argument("-c", "--config", required=True, help="YAML filter list (see docs/filters.md)")
    parser.set_defaults(func=cmd_filter)
    return parser


def cmd_filter(args: argparse.Namespace) -> int:
    print(format_funnel(run_filters(args.run_dir, args.config)))
    return 0
