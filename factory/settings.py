"""The factory's top-level config file (YAML), one section per stage."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from .config import StrictModel, load_yaml_config
from .llm.config import LLMConfig


class SmokeConfig(StrictModel):
    n: int = Field(4, ge=1, le=100_000, description="structured responses to generate")
    stage: str = "smoke"


class FactoryConfig(StrictModel):
    run_dir: Path = Path("outputs/smoke")
    llm: LLMConfig = Field(default_factory=LLMConfig)
    smoke: SmokeConfig = Field(default_factory=SmokeConfig)


def load_factory_config(path: str | Path | None) -> FactoryConfig:
    return load_yaml_config(FactoryConfig, path) if path else FactoryConfig()
