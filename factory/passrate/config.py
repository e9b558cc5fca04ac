"""Settings of `factory passrate` (a `passrate:` section, if the config file grows one)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config import StrictModel


class PassrateConfig(StrictModel):
    tasks: str | None = Field(None, description="JSONL/parquet task file or saved dataset (verl/AFM rows as they are)")
    count: int | None = Field(None, ge=1, description="tasks to sample from the file (None: all)")
    seed: int = Field(0, description="task sampling seed")
    domain: Literal["qa", "math", "code"] | None = Field(None, description="keep only tasks of this domain")
    n: int = Field(32, ge=1, le=4096, description="rollouts per task")
    temperature: float = Field(1.0, ge=0, le=2, description="sampling temperature of the policy")
    max_tokens: int = Field(4096, ge=1, description="tokens per rollout; a cut-off reply is scored as it is")
    label: str | None = Field(None, description="the `model` recorded in rollouts (default: llm.model)")
    checker: str | None = Field(None, description="a factory.checks name instead of the domain default")
    threshold: float = Field(0.3, ge=0, le=1, description="pass rate at or below which a task is kept for RL")
    retry_failures: bool = Field(True, description="ask again for samples whose request failed before")
