"""`factory status RUN_DIR [--watch]`, and `factory calls RUN_DIR` (a live snapshot while a run writes its store)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..llm.call_summary import format_call_summary, summarize_calls, summarize_query
from ..store import Store
from ..store.integrity import StoreBusyError
from .live import describe, format_live, load_live


def add_status_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    status = subparsers.add_parser("status", help="a run's progress, errors and spend, also while it runs")
    status.add_argument("run_dir", metavar="RUN_DIR", help="the run folder")
    status.add_argument("--watch", type=float, nargs="?", const=2.0, metavar="SECONDS",
                        help="print the status again every SECONDS (default 2) until the run ends")  # fmt: skip
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
    try:
        summary = summarize_calls(args.run_dir, args.stage)
    except StoreBusyError as busy:  # a run is writing the store: show its live snapshot instead
        return print_live_calls(args.run_dir, busy, args.json, args.stage)
    print(json.dumps(summary, indent=2, default=str) if args.json else format_call_summary(summary))
    return 0


def live_or_raise(run_dir: str | Path, busy: StoreBusyError) -> dict[str, Any]:
    """The running run's snapshot, or the busy error saying why there is none."""
    snapshot = load_live(run_dir)
    # A snapshot whose process is gone says nothing of whoever holds the lock now. A finished run's process
    # that is still alive is closing its store (its last snapshot is written just before the lock goes).
    closing = snapshot is not None and snapshot["status"] != "running" and snapshot["writer_alive"] is True
    if snapshot is None or snapshot["writer_alive"] is False or (snapshot["status"] != "running" and not closing):
        raise FactoryError(
            f"{busy}, and it publishes no live status (not a factory run, or an older factory): try again when it ends"
        )
    return snapshot


def live_json(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The call summary of the snapshot, with the snapshot's own fields under "live"."""
    return {**(snapshot.get("calls") or {}), "live": {k: v for k, v in snapshot.items() if k != "calls"}}


def print_live_calls(run_dir: str | Path, busy: StoreBusyError, as_json: bool, stage: str | None) -> int:
    """`factory calls` on a store a run is writing: the run's live snapshot, labelled as one."""
    snapshot = live_or_raise(run_dir, busy)
    if as_json:
        print(json.dumps(live_json(snapshot), indent=2, default=str))
        return 0
    print(describe(snapshot))
    if stage:
        print(f"(all stages: a live snapshot is not split by stage; run `factory calls --stage {stage}` when it ends)")
    print(format_call_summary(snapshot["calls"]) if snapshot.get("calls") else "no figures yet")
    return 0


def finished_status(run_dir: str | Path) -> dict[str, Any]:
    """The store's own account of a folder no run is writing: its last runs and its call log."""
    with Store.open(run_dir, read_only=True) as store:
        runs = store.query(
            "SELECT run_id, command, status, started_at, finished_at FROM runs "
            "ORDER BY started_at DESC NULLS LAST LIMIT 5"
        )
        calls = summarize_query(store.query)
    keys = ("run_id", "command", "status", "started_at", "finished_at")
    return {"running": False, "runs": [dict(zip(keys, row)) for row in runs], "calls": calls}


def format_finished(status: dict[str, Any]) -> str:
    lines = ["no run is writing this store; its latest runs:"]
    for run in status["runs"]:
        if run["status"] == "running":  # nobody holds the store, so its process is gone
            run = {**run, "status": "running when its process died (marked interrupted on the next write)"}
        lines.append(
            f"  {run['run_id']} {run['command']}: {run['status']} "
            f"(started {run['started_at']}, finished {run['finished_at'] or '-'})"
        )
    return "\n".join([*lines, format_call_summary(status["calls"])])


def show_status(run_dir: str, as_json: bool) -> bool:
    """Print the status once; True while a run is still writing the store."""
    try:
        status = finished_status(run_dir)
    except StoreBusyError as busy:
        snapshot = live_or_raise(run_dir, busy)
        print(json.dumps(live_json(snapshot), default=str) if as_json else format_live(snapshot), flush=True)
        return True
    print(json.dumps(status, default=str) if as_json else format_finished(status), flush=True)
    return False


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
