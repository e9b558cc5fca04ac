"""A run: one command's work against one run folder and its store."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pydantic import BaseModel

from .store import Store, utcnow


@dataclass
class Run:
    run_dir: Path
    run_id: str
    store: Store


@contextmanager
def open_run(run_dir: str | Path, command: str, config: BaseModel | None = None) -> Iterator[Run]:
    """Open (or resume) the run folder, record this invocation in `runs`, close on exit."""
    run_dir = Path(run_dir)
    store = Store.open(run_dir)
    run_id = f"{utcnow():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    config_json = config.model_dump_json() if config is not None else None
    store.execute("INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running')", [run_id, command, config_json, utcnow()])
    status = "failed"
    try:
        yield Run(run_dir, run_id, store)
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", [utcnow(), status, run_id])
        store.close()
