"""What a run store already knows, read without writing: the dry run opens it read-only (and never creates it).

It gives what is already done (a rerun estimate is what is left), the calls already answered (cache hits are
free), how many characters a token of this model was in the logged calls, how long its replies were, and the
spend recorded so far (what `llm.max_cost_usd` counts).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ..errors import FactoryError
from ..llm import LLMConfig, Request
from ..llm.request import call_params, request_key
from ..llm.structured import output_spec
from ..store import Store
from ..store.db import STORE_FILENAME
from .tokens import chars_of

MIN_CALIBRATION_CALLS = 3


@contextlib.contextmanager
def open_existing(run_dir: str | Path) -> Iterator[Store | None]:
    """The run's store read-only, or None when there is none (nothing is created)."""
    if not (Path(run_dir) / STORE_FILENAME).is_file():
        yield None
        return
    try:
        store = Store.open(run_dir, read_only=True)
    except FactoryError as exc:  # held by a running command, or damaged: estimate as if nothing were done
        raise FactoryError(f"dry run: cannot read the run store: {exc}") from None
    with store:
        yield store


def query(store: Store | None, sql: str, params: list[Any] | None = None) -> list[tuple]:
    """Rows, or none where the store is missing or older than the table asked for."""
    if store is None:
        return []
    try:
        return store.query(sql, params or [])
    except (duckdb.Error, FactoryError):
        return []


def cache_key(config: LLMConfig, request: Request) -> str:
    """The key the client would look `request` up by (client.run: the config's params under the request's)."""
    params = call_params(config, request)
    spec = output_spec(request.response_model) if request.response_model is not None else None
    model_id = (config.model or "local").strip()
    return request_key(model_id, config.cache_namespace, request.messages, params,
                       spec.schema_json if spec else None, request.sample_index)  # fmt: skip


def answered_keys(store: Store | None, config: LLMConfig) -> set[str]:
    """Request keys with an answer in the call log (what a rerun gets without sending); none with cache off."""
    if not config.cache:
        return set()
    return {key for (key,) in query(store, "SELECT request_hash FROM llm_calls WHERE status = 'ok'")}


def calibration(store: Store | None, model: str) -> tuple[float, int] | None:
    """(characters per prompt token, calls) over this model's logged calls with a reported prompt size."""
    rows = query(store, "SELECT messages, prompt_tokens FROM llm_calls WHERE model = ? AND prompt_tokens > 0", [model])
    if len(rows) < MIN_CALIBRATION_CALLS:
        return None
    chars = sum(chars_of(orjson.loads(messages)) for messages, _ in rows)
    return chars / sum(tokens for _, tokens in rows), len(rows)


def mean_completion(store: Store | None, model: str, stage_like: str) -> float | None:
    """This model's mean completion tokens over answered calls of the stages matching `stage_like` (SQL LIKE)."""
    rows = query(store, "SELECT avg(completion_tokens), count(*) FROM llm_calls WHERE model = ? AND stage LIKE ? "
                 "AND status = 'ok' AND completion_tokens IS NOT NULL", [model, stage_like])  # fmt: skip
    return float(rows[0][0]) if rows and rows[0][1] else None


def recorded_spend(store: Store | None) -> float:
    rows = query(store, "SELECT coalesce(sum(cost_usd), 0) FROM llm_calls")
    return float(rows[0][0]) if rows else 0.0
