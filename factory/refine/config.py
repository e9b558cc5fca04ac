"""The `refine:` section of the factory config: personas, mistakes, budgets and who plays which part."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ..config import StrictModel


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
    mistake_counts: dict[int, float] = Field(
        {2: 0.5, 3: 0.3, 4: 0.2},
        description="weights of how many corrected mistakes a row aims for (never below min_corrections); "
        "the LLM's own mistakes count, injection adds the rest",
    )
    error_mix: dict[Literal["parameter", "location", "logic", "unknown_action"], float] = Field(
        {"parameter": 0.3, "location": 0.3, "logic": 0.25, "unknown_action": 0.15},
        description="weights of the injected error types (a type impossible at the chosen step yields to another)",
    )
    first_move_mistakes: float = Field(
        0.1,
        ge=0,
        le=1,
        description="share of injecting rows whose first move is an injected mistake; "
        "the other positions are drawn uniformly over the verified steps",
    )

    @field_validator("mistake_counts", "error_mix")
    @classmethod
    def _weights(cls, weights: dict) -> dict:
        if any(w < 0 for w in weights.values()) or not any(w > 0 for w in weights.values()):
            raise ValueError("weights must be >= 0 with at least one above 0")
        if any(isinstance(k, int) and not 0 <= k <= 20 for k in weights):
            raise ValueError("mistake counts must be between 0 and 20")
        return weights

    max_steps: int = Field(10, ge=2, le=30)
    dm_evaluation: Literal["llm", "world"] = Field(
        "llm", description="who judges each action: the LLM as DM (the paper), or the script's world (small models)"
    )
    scripts: Literal["auto", "llm", "procedural"] = Field(
        "auto",
        description="who writes the world: the LLM (the paper), a seeded procedural builder "
        "(small models), or auto: procedural for the embedded 'local' model, the LLM otherwise",
    )
    trajectories: Literal["auto", "llm", "scaffolded"] = Field(
        "auto",
        description="who plays the trajectory: the LLM (the paper), or scaffolded (small models: the world's "
        "shortest plan fixes each action and the DM's lines, the LLM writes the player's thoughts); "
        "auto: scaffolded for the embedded 'local' model, the LLM otherwise",
    )
