"""The factory's top-level config file (YAML), one section per stage."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from .coa.config import CoaConfig
from .config import StrictModel, load_yaml_config
from .llm.config import LLMConfig
from .passrate.config import PassrateConfig


class SmokeConfig(StrictModel):
    n: int = Field(4, ge=1, le=100_000, description="structured responses to generate")
    stage: str = "smoke"


class RefineConfig(StrictModel):
    personas: str | None = Field(None, description="JSONL/CSV/parquet file or saved dataset; None: the shipped library")
    persona_field: str | None = Field(None, description="column holding the persona text (default: persona)")
    count: int = Field(4, ge=1, description="personas to sample, one trajectory each")
    seed: int = 0
    min_corrections: int = Field(2, ge=0, description="corrected mistakes a trajectory must hold")
    budget: int = Field(4, ge=2, description="LLM calls per trajectory, the script included")
    script_tries: int = Field(2, ge=1)
    with_code: bool = Field(True, description="ask for validation code and verify it in the sandbox")
    injection: bool = Field(True, description="inject corrupted actions so corrections are guaranteed")
    max_steps: int = Field(10, ge=2, le=30)
    dm_evaluation: Literal["llm", "world"] = Field(
        "llm", description="who judges each action: the LLM as DM (the paper), or the script's world (small models)"
    )


class FactoryConfig(StrictModel):
    run_dir: Path = Path("outputs/smoke")
    llm: LLMConfig = Field(default_factory=LLMConfig)
    smoke: SmokeConfig = Field(default_factory=SmokeConfig)
    refine: RefineConfig = Field(default_factory=RefineConfig)
    coa: CoaConfig = Field(default_factory=CoaConfig)
    passrate: PassrateConfig = Field(default_factory=PassrateConfig)


def load_factory_config(path: str | Path | None) -> FactoryConfig:
    return load_yaml_config(FactoryConfig, path) if path else FactoryConfig()
