"""`PairsConfig`: the settings of `factory pairs` (the run config's `pairs:` section).

pairs:
  tasks: [../shared/data/tasks/nq_full.jsonl]   # where the references are; default: coa.tasks, passrate.tasks
  rollouts_model: qwen-7b                        # the rollouts label the closed-book evidence is read under
  min_pass_rate: 0.8
  min_rollouts: 8

Why 0.8 over at least 8 judged rollouts: a `when_not_to_act` pair teaches the model to answer without
looking, so it needs evidence that the model knows the answer, not that it once guessed it. At 8 rollouts
0.8 means 7 right: a model right half the time gets there 3.5% of the time, one right 90% of the time 81%.
"""

from __future__ import annotations

from pydantic import Field

from ...config import StrictModel


class PairsConfig(StrictModel):
    tasks: list[str] = Field(
        default_factory=list,
        description="task files holding the references (JSONL/parquet/dataset folder); empty: the files the "
        "run's own configs named (coa.tasks, passrate.tasks)",
    )
    rollouts_model: str | None = Field(
        None,
        description="the `model` label of the closed-book rollouts (factory passrate --label); default: the "
        "one label the run's rollouts hold, else llm.model",
    )
    min_pass_rate: float = Field(
        0.8, ge=0, le=1, description="closed-book pass rate at or above which a right recall answer is a pair"
    )
    min_rollouts: int = Field(8, ge=1, description="judged closed-book rollouts a when_not_to_act pair needs")
    checker: str | None = Field(None, description="a factory.checks name (default: coa.checker, else by domain)")
