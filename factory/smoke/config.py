"""The `smoke:` section of the factory config: how many structured responses `factory smoke` asks for."""

from __future__ import annotations

from pydantic import Field

from ..config import StrictModel


class SmokeConfig(StrictModel):
    n: int = Field(4, ge=1, le=100_000, description="structured responses to generate")
    stage: str = "smoke"
