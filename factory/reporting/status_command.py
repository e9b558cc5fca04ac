"""`factory status RUN_DIR [--watch]` and `factory calls RUN_DIR`: read from the store, also while a run writes it."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..llm.call_summary import format_call_summary, pending_calls, summarize_calls, summarize_query
from ..store import Store


def add_status_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    status = subparsers.add_parser("status", help="a run's progress, errors and spend, also while it runs")
    status.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    status.add_argument("--watch", type=float, nargs="?", const=2.0, metavar="SECONDS",
                        help="print the status again every SECONDS (default 2) until no run is going")  # fmt: skip
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=cmd_status)
    return status


def add_calls_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    calls = subparsers.add_parser("calls", help="summarise a run's LLM call log")
    calls.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    calls.add_argument("--stage", help="only this stage")
    calls.add_argument("--json", action="store_true", help="machine-readable output")
    calls.set_defaults(func=cmd_calls)
    return calls


def cmd_calls(args: argparse.Namespace) -> int:
    summary = summarize_calls(args.run_dir, args.stage)
    print(json.dumps(summary, indent=2, default=str) if args.json else format_call_summary(summary))
    return 0


RUN_KEYS = ("run_id", "command", "status", "started_at", "finished_at")


def run_status(run_dir: str | Path) -> dict[str, Any]:
    """The store's account of the folder: its latest runs (a `running` one whose process is gone is
    called so), its call log and the calls on the wire."""
    with Store.open(run_dir, read_only=True) as store, store.snapshot():
        rows = store.query(f"SELECT {', '.join(RUN_KEYS)} FROM runs ORDER BY started_at DESC NULLS LAST LIMIT 5")
        runs = [dict(zip(RUN_KEYS, row)) for row in rows]
        for run in runs:
            if run["status"] == "running" and not store.run_locks.held(run["run_id"]):
                run["status"] = "running when its process died (marked interrupted on the next write)"
        calls = {**summarize_query(store.query), "pending": pending_calls(store)}
    return {"running": any(run["status"] == "running" for run in runs), "runs": runs, "calls": calls}


def format_status(status: dict[str, Any]) -> str:
    lines = ["a run is writing this store; its latest runs:" if status["running"] else "its latest runs:"]
    for run in status["runs"]:
        lines.append(
            f"  {run['run_id']} {run['command']}: {run['status']} "
            f"(started {run['started_at']}, finished {run['finished_at'] or '-'})"
        )
    return "\n".join([*lines, format_call_summary(status["calls"])])


def show_status(run_dir: str, as_json: bool) -> bool:
    """Print the status once; True while a run is still going."""
    status = run_status(run_dir)
    print(json.dumps(status, default=str) if as_json else format_status(status), flush=True)
    return status["running"]


def cmd_status(args: argparse.Namespace) -> int:
    if args.watch is not None and args.watch <= 0:
        raise FactoryError(f"--watch needs a positive number of seconds, not {args.watch:g}")
    running = show_status(args.run_dir, args.json)
    try:
        while running and args.watch:
            time.sleep(args.watch)
            print("" if args.json else "\n", end="")
            running = show_status(args.run_dir, args.json)
    except KeyboardInterrupt:  # stopping a watch stops nothing else
        return 0
    return 0
