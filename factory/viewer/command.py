"""`factory ls RUN`: list a run's trajectories (and failed scripts) with their stats and reasons;
`factory show RUN ID`: print one of them, mistakes marked."""

from __future__ import annotations

import argparse
import sys

from ..errors import FactoryError
from .listing import as_json, load_rows, sample, select
from .pick import last_shown, pick_id, remember
from .table import format_table

DEFAULT_LIMIT = 50


def add_ls_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "ls",
        help="list a run's trajectories: stats, kept or dropped, and why rows failed",
        description="One line per trajectory: ok (verified), export (kept: the export writes it; dropped: a filter "
        "dropped it), correct (the answer check), turns, tools (tool calls; refine: the player's actions), "
        "fixes (refine: corrected mistakes; coa: reflections) and the reason it failed or was dropped.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the run folder holding factory.sqlite")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--failed",
        action="store_const",
        dest="shown",
        const="failed",
        help="only rows that failed: unverified trajectories and refine scripts that failed checks",
    )
    shown.add_argument(
        "--kept",
        action="store_const",
        dest="shown",
        const="kept",
        help="only rows the export would write (verified, no filter dropped them)",
    )
    shown.add_argument(
        "--dropped",
        action="store_const",
        dest="shown",
        const="dropped",
        help="only verified rows a filter dropped, with the filter's reason",
    )
    parser.add_argument("--sample", type=int, metavar="N", help="N random rows of those chosen (seeded by --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument(
        "--where",
        metavar="SQL",
        help="a SQL predicate over the trajectories table's columns, e.g. \"source = 'coa'\" "
        "or 'n_turns > 8' (script rows have no such columns and are left out)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show at most N rows (default {DEFAULT_LIMIT}; 0: all)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per row, reasons uncut, no table")
    parser.set_defaults(func=cmd_ls, shown="all")
    return parser


def cmd_ls(args: argparse.Namespace) -> int:
    for flag in ("sample", "limit"):
        if getattr(args, flag) is not None and getattr(args, flag) < 0:
            raise FactoryError(f"--{flag} must be 0 or more, not {getattr(args, flag)}")
    every = load_rows(args.run_dir, args.where, with_scripts=args.shown == "failed")
    chosen = select(every, args.shown)
    picked = sample(chosen, args.sample, args.seed)
    shown = picked[: args.limit] if args.limit else picked
    if args.json:
        for row in shown:
            print(as_json(row))
        return 0
    if shown:
        print("\n".join(format_table(shown)))
    print(total_line(len(shown), len(picked), len(chosen), args))
    return 0


def total_line(shown: int, picked: int, chosen: int, args: argparse.Namespace) -> str:
    """`12 of 40 rows; factory show RUN ID`, with what narrowed the list and how to see the rest."""
    narrowed = [f"--{args.shown}"] if args.shown != "all" else []
    narrowed += [f"--where {args.where!r}"] * bool(args.where)
    line = f"{shown} of {chosen} rows" + (f" ({' '.join(narrowed)})" if narrowed else "")
    if picked < chosen:
        line += f", a sample of {picked} (seed {args.seed})"
    if shown < picked:
        line += "; --limit 0 lists all"
    return f"{line}; factory show {args.run_dir} ID"


def add_show_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    show = subparsers.add_parser("show", help="print one trajectory, mistakes marked (find ids with factory ls)")
    show.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    show.add_argument("id", metavar="ID", nargs="?", help="trajectory id (refine:PERSONA, coa:TASK) or persona id")
    show.add_argument("--random", action="store_true", help="a random trajectory instead of an ID")
    show.add_argument(
        "--next",
        action="store_true",
        help="the trajectory after the last one shown (in id order; the first one the first time)",
    )
    show.add_argument("--seed", type=int, help="seed of --random, to pick the same row again")
    show.set_defaults(func=cmd_show)
    return show


def cmd_show(args: argparse.Namespace) -> int:
    from ..refine.show import format_trajectory, load_trajectory_row

    last = last_shown(args.run_dir)
    row = load_trajectory_row(args.run_dir, pick_id(args.run_dir, args.id, args.random, args.next, args.seed))
    if args.next and last is not None and row["trajectory_id"] <= last:
        print("(past the last trajectory: back to the first)", file=sys.stderr)
    print(format_trajectory(row, color=sys.stdout.isatty()))
    remember(args.run_dir, row["trajectory_id"])  # where --next goes on from
    return 0
