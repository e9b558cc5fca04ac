"""A run: one command's work against one run folder and its store."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from pydantic import BaseModel

from .errors import FactoryError
from .prompts import prompts_from
from .store import Store, utcnow
from .store.db import STORE_ERRORS
from .store.errors import first_line


@dataclass
class Run:
    run_dir: Path
    run_id: str
    store: Store


@contextmanager
def open_run(
    run_dir: str | Path, command: str, config: BaseModel | None = None, require_an_answer: bool = True
) -> Iterator[Run]:
    """Open (or resume) the run folder, record this invocation in `runs`, close on exit.

    The run's row ends `done`, `failed`, or `interrupted` (Ctrl-C, or its task cancelled); a run
    killed outright stays `running` until the store is next opened for writing (Store marks it).
    While it goes, a status snapshot beside the store lets readers follow it (store/live.py).
    With `require_an_answer`, a run whose every call went unanswered fails (refuse_if_no_answer_came);
    smoke and ping report their calls themselves and exit 1 on errors.
    """
    run_dir = Path(run_dir)
    store = Store.open(run_dir)
    run_id = f"{utcnow():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    config_json = config.model_dump_json() if config is not None else None
    started = utcnow()
    store.run_locks.take(run_id)  # before the row: a `running` row without a held lock is a dead run
    status = "failed"
    try:
        store.execute("INSERT INTO runs VALUES (?, ?, ?, ?, NULL, 'running')", [run_id, command, config_json, started])
        with prompts_from(config):  # the config's prompts_dir, for this run only
            yield Run(run_dir, run_id, store)
        if require_an_answer:
            refuse_if_no_answer_came(store, run_id, run_dir)
        status = "done"
    # asyncio.run turns Ctrl-C into a CancelledError in the main task (KeyboardInterrupt comes after).
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    finally:
        _finish(store, run_id, status)


class NoAnswerCame(FactoryError):
    """The run asked and the endpoint never answered: nothing was made, whatever the stage says of its result."""


# Failures where the endpoint gave no answer (unreachable, refusing the key, the model or the request format,
# failing, throttling to the end); a reply that came but did not fit (schema, length, refusal) is a counted
# outcome of the stage, not this.
NO_ANSWER_KINDS = ("connection", "timeout", "server", "rate_limit", "auth", "quota", "not_found", "unsupported_format")


def refuse_if_no_answer_came(store: Store, run_id: str, run_dir: Path) -> None:
    """A run whose every LLM call went unanswered (an unreachable endpoint, a wrong key, a model name the
    server lacks) is `failed` and exits non-zero, not `done` with nothing in it. The calls stay in the log."""
    kinds = ", ".join(f"'{kind}'" for kind in NO_ANSWER_KINDS)
    try:
        rows = store.query(
            f"SELECT coalesce(error_kind, status), count(*) AS n, bool_and(coalesce(error_kind IN ({kinds}), false)) "
            "FROM llm_calls WHERE run_id = ? GROUP BY ALL ORDER BY n DESC",
            [run_id],
        )
    except STORE_ERRORS:  # a store that cannot be read now: the run's end reports it (_finish)
        return
    if not rows or not all(unanswered for _, _, unanswered in rows):
        return
    said = ", ".join(f"{kind}={n}" for kind, n, _ in rows)
    raise NoAnswerCame(f"every LLM call of this run went unanswered ({said}); see them with: factory calls {run_dir}")


def _finish(store: Store, run_id: str, status: str) -> None:
    """Record how the run ended, close the store.

    When the run failed, its own error is the news: a store that cannot take the last update
    (a full disk, a damaged or invalidated file) must not replace it with a second error. The
    row then stays `running`, and the next writer marks it `interrupted`.
    """
    try:
        store.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", [utcnow(), status, run_id])
    except Exception as exc:
        if status == "done":
            raise FactoryError(f"cannot record the end of run {run_id} in {store.path}: {first_line(exc)}") from None
    finally:
        store.run_locks.release(run_id)
        _close(store, quiet=status != "done")


def _close(store: Store, quiet: bool) -> None:
    try:
        store.close()
    except Exception as exc:
        if not quiet:
            raise FactoryError(f"cannot close run store {store.path}: {first_line(exc)}") from None
