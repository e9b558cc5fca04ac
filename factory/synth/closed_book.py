"""The closed-book gate: a task a model answers without tools is no search task (AFM's rule).

AFM drops a synthesized question when a no-tool model's pass rate is above a
threshold (0.3): the calls a trajectory makes on it would be for show. This gate
uses the pass-rate machinery (factory/passrate): `ensure_rollouts` samples the
policy model `samples` times per task into a store (resumable; a rerun asks no
finished request again) and `pass_rates` reads the rates back.

With no model configured the gate is recorded as not run on every candidate,
never as passed; a task whose every sample failed is recorded the same way.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ..config import StrictModel
from ..llm import LLMConfig
from ..passrate.rates import pass_rates
from ..passrate.sampler import ensure_rollouts
from ..store import Store
from .candidate import Candidate


class ClosedBookConfig(StrictModel):
    model: str = Field(description="the no-tool model: a litellm string, or a name served at base_url")
    base_url: str | None = None
    api_key_env: str | None = None
    samples: int = Field(4, ge=1, le=64)
    max_pass_rate: float = Field(0.3, ge=0, le=1, description="a higher no-tool pass rate drops the task")
    run_dir: Path = Field(Path("outputs/expand"), description="the store the samples are kept in")
    concurrency: int = Field(8, ge=1)
    max_tokens: int = Field(1024, ge=16)


def closed_book_gate(candidates: list[Candidate], config: ClosedBookConfig | None) -> None:
    if not candidates:
        return
    if config is None:
        for candidate in candidates:
            candidate.skip("closed_book", "no closed-book model given (--closed-book-model)")
        return
    llm = LLMConfig(model=config.model, base_url=config.base_url, api_key_env=config.api_key_env)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(config.run_dir)
    try:
        store.migrate()
        tasks = [candidate.task for candidate in candidates]
        ensure_rollouts(store, tasks, llm, n=config.samples, concurrency=config.concurrency, temperature=1.0,
                        max_tokens=config.max_tokens)  # fmt: skip
        rates = {row["task_id"]: row for row in pass_rates(store, config.model, [t.id for t in tasks]).to_pylist()}
    finally:
        store.close()
    for candidate in candidates:
        judge(candidate, rates.get(candidate.task.id), config)


def judge(candidate: Candidate, row: dict | None, config: ClosedBookConfig) -> None:
    if row is None or row["pass_rate"] is None:
        candidate.skip("closed_book", "no scored closed-book sample (every request failed)")
        return
    rate, limit = row["pass_rate"], config.max_pass_rate
    verdict = f"closed-book pass rate {rate:.2f} ({row['n_correct']}/{row['n']}, {config.model})"
    candidate.judge("closed_book", rate <= limit, verdict + (f" > {limit}" if rate > limit else f" <= {limit}"))
