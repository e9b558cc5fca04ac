"""A live run's status, published beside its store for readers that the write lock keeps out.

DuckDB lets no other process open a file that a process writes, so while a run goes,
`factory calls`, `factory report` and `factory status` read this snapshot instead: a small
JSON file (run, command, elapsed, calls ok/error by kind, tokens, cost, rows per table, last
error) that the run rewrites every couple of seconds and once more at its end.

The snapshot is made in a background thread, on a DuckDB cursor of its own: the batch never
waits for it on the store's Python lock, and DuckDB serves the reads beside the writes. The
file is written whole (a temp file, then os.replace), so a reader never sees half of one. A
snapshot that fails is logged once and skipped: watching a run never stops it.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

STATUS_FILENAME = "factory.status.json"
INTERVAL_ENV = "FACTORY_STATUS_INTERVAL_S"  # seconds between snapshots; 0: only at the start and the end
DEFAULT_INTERVAL_S = 2.0
FORMAT = 1

log = logging.getLogger(__name__)

Query = Callable[[str, list[Any] | None], list[tuple]]
Summarize = Callable[[Query], dict[str, Any]]


def interval_from_env() -> float:
    try:
        return max(0.0, float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL_S)))
    except ValueError:
        return DEFAULT_INTERVAL_S


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def write_atomically(path: Path, data: dict[str, Any]) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data, default=str))
    os.replace(temp, path)


def table_rows(query: Query) -> dict[str, int]:
    """Rows per table, from DuckDB's table statistics (no scan)."""
    rows = query(
        "SELECT table_name, estimated_size FROM duckdb_tables() "
        "WHERE database_name = current_database() AND table_name <> 'migrations'",
        None,
    )
    return {name: int(size) for name, size in rows}


def run_calls(query: Query, run_id: str) -> dict[str, Any]:
    """This run's own calls so far (the call log writes them within a fraction of a second)."""
    calls, ok, prompt, completion, cost = query(
        "SELECT count(*), count(*) FILTER (status = 'ok'), coalesce(sum(prompt_tokens), 0), "
        "coalesce(sum(completion_tokens), 0), sum(cost_usd) FROM llm_calls WHERE run_id = ?",
        [run_id],
    )[0]
    errors = dict(query("SELECT error_kind, count(*) FROM llm_calls WHERE run_id = ? AND status = 'error' "
                        "GROUP BY 1 ORDER BY 2 DESC", [run_id]))  # fmt: skip
    return {"calls": calls, "ok": ok, "errors": errors, "prompt_tokens": prompt,
            "completion_tokens": completion, "cost_usd": cost}  # fmt: skip


def last_error(query: Query) -> dict[str, Any] | None:
    rows = query(
        "SELECT finished_at, stage, error_kind, error FROM llm_calls WHERE status = 'error' "
        "ORDER BY finished_at DESC NULLS LAST LIMIT 1",
        None,
    )
    if not rows:
        return None
    at, stage, kind, error = rows[0]
    return {"at": at, "stage": stage, "kind": kind, "error": (error or "")[:500]}


class StatusPublisher:
    """Publishes a run's status file every `interval_s` seconds from a daemon thread, and at the end."""

    def __init__(self, run_dir: Path, run: dict[str, Any], cursor: Any, summarize: Summarize, interval_s: float,
                 in_memory: Callable[[], dict[str, Any]] | None = None):  # fmt: skip
        self.path = Path(run_dir) / STATUS_FILENAME
        self.in_memory = in_memory  # figures the process holds and the store does not (HTTP attempts on the wire)
        self.run = {**run, "pid": os.getpid(), "host": socket.gethostname()}
        self.cursor = cursor  # a DuckDB cursor used by this publisher alone
        self.summarize = summarize
        self.interval_s = interval_s
        self.started = time.monotonic()
        self.figures: dict[str, Any] = {}
        self.rows_at_start: dict[str, int] = {}
        self.failed_once = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="factory-status", daemon=True)

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        return self.cursor.execute(sql, params or []).fetchall()

    def start(self) -> None:
        self.rows_at_start = self._guard(lambda: table_rows(self.query)) or {}
        self.publish("running")
        if self.interval_s > 0:
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.publish("running")

    def finish(self, status: str) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.publish(status)
        self._guard(self.cursor.close)

    def publish(self, status: str) -> None:
        figures = self._guard(self._figures)
        if figures is not None:
            self.figures = figures  # a failed query keeps the last figures, newer state
        if self.in_memory is not None:
            self.figures.update(self._guard(self.in_memory) or {})
        self._guard(lambda: write_atomically(self.path, self.snapshot(status)))

    def snapshot(self, status: str) -> dict[str, Any]:
        return {"format": FORMAT, **self.run, "status": status, "updated_at": now_iso(),
                "elapsed_s": round(time.monotonic() - self.started, 3),
                "interval_s": self.interval_s, **self.figures}  # fmt: skip

    def _figures(self) -> dict[str, Any]:
        # One read transaction: every figure from the same state of the store, so the row counts and the call
        # summary agree even while the run writes between the queries (a busy machine widens that window).
        self.query("BEGIN TRANSACTION")
        try:
            totals = table_rows(self.query)
            added = {name: n - self.rows_at_start.get(name, 0) for name, n in totals.items()}
            return {"this_run": run_calls(self.query, self.run["run_id"]), "last_error": last_error(self.query),
                    "rows": totals, "rows_added": added, "calls": self.summarize(self.query)}  # fmt: skip
        finally:
            self.query("ROLLBACK")

    def _guard(self, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except Exception as exc:  # a snapshot must never stop the run: say so once, then keep quiet
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
                return None  # a full disk is the run's own one-line error (store, journal): not a second line
            if not self.failed_once:
                self.failed_once = True
                log.warning("live status %s not updated: %s", self.path, str(exc).splitlines()[0] if str(exc) else exc)
            return None
