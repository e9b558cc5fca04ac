"""Reading a run while it goes: the status snapshot its process publishes (factory/store/live.py).

Used by `factory calls`, `factory report` and `factory status` when the store is locked by its
writer. Every view says it is a live snapshot and how old it is; a snapshot whose process is
gone, or that has not been rewritten for several periods, is called stale.
"""

from __future__ import annotations

import html
import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..llm.call_summary import format_call_summary
from ..llm.inflight import describe as describe_wire
from ..store.live import STATUS_FILENAME

STALE_PERIODS = 5  # a snapshot not rewritten for this many periods (and >= 10 s) is stale


def load_live(run_dir: str | Path) -> dict[str, Any] | None:
    """The run folder's status snapshot, with its age and whether its writer is alive; None if there is none."""
    try:
        snapshot = json.loads((Path(run_dir) / STATUS_FILENAME).read_text())
        updated = datetime.fromisoformat(snapshot["updated_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    snapshot["age_s"] = max(0.0, (datetime.now(timezone.utc) - updated).total_seconds())
    snapshot["writer_alive"] = _alive(snapshot.get("pid"), snapshot.get("host"))
    return snapshot


def _alive(pid: Any, host: Any) -> bool | None:
    """Whether the writing process still exists (None: another host, cannot tell)."""
    if host != socket.gethostname() or not isinstance(pid, int):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(snapshot: dict[str, Any]) -> bool:
    if snapshot["status"] != "running":
        return False
    if snapshot["writer_alive"] is False:
        return True
    period = float(snapshot.get("interval_s") or 2.0)
    return snapshot["age_s"] > max(10.0, STALE_PERIODS * period)


def describe(snapshot: dict[str, Any]) -> str:
    """One line saying whose snapshot this is, its age, and what state it shows."""
    state = snapshot["status"]
    if is_stale(snapshot):
        gone = "its process is gone" if snapshot["writer_alive"] is False else "no update since"
        state = f"STALE ({gone}; the run may have been killed)"
    return (
        f"live snapshot of run {snapshot['run_id']} ({snapshot['command']}, pid {snapshot['pid']}): {state}, "
        f"elapsed {snapshot['elapsed_s']:.1f}s, snapshot {snapshot['age_s']:.1f}s old"
    )


def format_live(snapshot: dict[str, Any]) -> str:
    """The snapshot as text: its label, this run's calls, rows written, last error, and the call-log summary."""
    mine = snapshot.get("this_run") or {}
    errors = ", ".join(f"{k}={n}" for k, n in (mine.get("errors") or {}).items()) or "none"
    cost = "unknown" if mine.get("cost_usd") is None else f"${mine['cost_usd']:.4f}"
    added = ", ".join(f"{t} +{n}" for t, n in (snapshot.get("rows_added") or {}).items() if n) or "none yet"
    lines = [
        describe(snapshot),
        f"this run: {mine.get('calls', 0)} calls ({mine.get('ok', 0)} ok), errors: {errors}, tokens: "
        f"{mine.get('prompt_tokens', 0)} prompt + {mine.get('completion_tokens', 0)} completion; cost: {cost}",
        f"rows written: {added}",
    ]
    wire = describe_wire(snapshot.get("in_flight"))
    if wire:
        lines.append(f"HTTP attempts now: {wire} ({snapshot['in_flight']['attempts_started']} started)")
    last = snapshot.get("last_error")
    if last:
        lines.append(f"last error: [{last['stage']}] {last['kind']}: {last['error'].splitlines()[0][:200]}")
    if snapshot.get("calls"):
        lines += ["call log (whole store, as of the snapshot):", format_call_summary(snapshot["calls"])]
    return "\n".join(lines)


def render_live_html(snapshot: dict[str, Any]) -> str:
    """A small page for `factory report` while the run goes: the snapshot, labelled, and how to get the full report."""
    label = html.escape(describe(snapshot))
    body = html.escape(format_live(snapshot).split("\n", 1)[1])  # all but the label line
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>factory: live run status</title></head><body>"
        f"<h1>Live snapshot, not the full report</h1><p><strong>{label}</strong></p>"
        "<p>The run is still writing its store. Run <code>factory report</code> again when it ends "
        "for the charts and tables.</p>"
        f"<pre>{body}</pre></body></html>"
    )
