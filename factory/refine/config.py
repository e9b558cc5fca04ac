"""The `refine:` section of the factory config: personas, mistakes, budgets and who plays which part."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, PrivateAttr, field_validator, model_validator

from ..config import StrictModel

# The mistakes an agent really makes (refine/slips.py says what each is and how a move is judged one).
SlipKind = Literal[
    "wrong_value", "wrong_amount", "wrong_place", "missing_item", "skipped_step", "premature_finish", "stale_belief"
]
SLIPS: tuple[str, ...] = get_args(SlipKind)


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
    slip_mix: dict[SlipKind, float] = Field(
        default_factory=lambda: dict.fromkeys(SLIPS, 1.0),
        description="weights of the injected slip kinds (refine/slips.py), times a prior learned from the LLM's "
        "own mistakes in the run store; a kind impossible at the chosen step yields to another",
    )
    first_move_mistakes: float = Field(
        0.1,
        ge=0,
        le=1,
        description="share of injecting rows whose first move is an injected mistake; "
        "the other positions are drawn uniformly over the verified steps",
    )

    # LLM-made slips the run store held when the batch began (slips.learned_counts), set by the batch: the
    # injected kinds lean toward them. Read once, so a run's draws do not depend on which rows finish first.
    _slip_counts: dict[str, dict[str, int]] = PrivateAttr(default_factory=dict)

    def with_slip_counts(self, counts: dict[str, dict[str, int]]) -> "RefineConfig":
        copy = self.model_copy()
        copy._slip_counts = counts
        return copy

    @property
    def slip_counts(self) -> dict[str, dict[str, int]]:
        return self._slip_counts

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "error_mix" in data:
            raise ValueError(f"refine.error_mix was replaced by refine.slip_mix, weights of: {', '.join(SLIPS)}")
        return data

    @field_validator("mistake_counts", "slip_mix")
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
