"""Persona-to-persona expansion, as in Persona Hub: from each seed persona, an
LLM writes personas of the people close to it (colleague, family, client,
rival...). New personas are deduplicated against the seeds and each other and
remember their seed as parent_id. A failed call is counted, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Iterable

from pydantic import BaseModel, Field, StringConstraints

from ..errors import FactoryError
from ..llm import LLMClient, Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from .dedup import NEAR_THRESHOLD, Dropped, dedup_personas
from .model import Persona, text_id

EXPAND_SOURCE = "persona-expand"
MAX_PER_SEED = 6

# Bounded on purpose: under a schema a small model will otherwise return an
# empty list, or fill an open string until max_tokens cuts the reply off.
Relation = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=40)]
PersonaText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=30, max_length=300)]


class RelatedPersona(BaseModel):
    relation: Relation
    persona: PersonaText


class RelatedPersonas(BaseModel):
    personas: list[RelatedPersona] = Field(min_length=1, max_length=MAX_PER_SEED)


@dataclass
class ExpansionOutcome:
    personas: list[Persona] = field(default_factory=list)  # new, deduplicated, parent_id set
    dropped: list[Dropped] = field(default_factory=list)  # duplicates of a seed or of each other
    failed: list[tuple[str, str]] = field(default_factory=list)  # (seed id, error kind)

    @property
    def failures(self) -> int:
        return len(self.failed)


class PersonaExpander(Role):
    """A seed persona -> per_seed personas of the people close to it (factory.llm.role); no I/O."""

    name, reply_type = "persona_expander", RelatedPersonas

    def __init__(self, per_seed: int, stage: str):
        self.per_seed = per_seed
        self.stage = stage

    def request(self, seed: Persona, sample_index: int = 0) -> Request:
        user = render_prompt("personas/expand_user", persona=seed.text, count=self.per_seed)
        # Room for per_seed personas of up to 300 characters each, plus the JSON around them.
        params = {"max_tokens": 150 + 120 * self.per_seed}
        messages = chat(load_prompt("personas/expand_system"), user)
        return Request(
            messages, self.reply_type, stage=self.stage, sample_index=sample_index, params=params, tag=seed.id
        )

    def parse(self, reply: RelatedPersonas, seed: Persona) -> list[Persona]:
        # A model may write more than asked (the schema allows up to MAX_PER_SEED): keep the first per_seed.
        return [
            Persona(id=text_id(item.persona), text=item.persona, source=EXPAND_SOURCE, parent_id=seed.id,
                    tags={"relation": item.relation})
            for item in reply.personas[: self.per_seed]
        ]  # fmt: skip


async def expand_personas(
    llm: LLMClient,
    seeds: Iterable[Persona],
    per_seed: int = 3,
    stage: str = "persona_expand",
    progress: bool = True,
    threshold: float = NEAR_THRESHOLD,
    sample_index: int = 0,
) -> ExpansionOutcome:
    """One call per seed, asking for per_seed related personas (1 to MAX_PER_SEED).

    A rerun with the same arguments is answered from the call cache; a new
    sample_index asks the model afresh for the same seeds.
    """
    if not 1 <= per_seed <= MAX_PER_SEED:
        raise FactoryError(f"per_seed must be between 1 and {MAX_PER_SEED}, got {per_seed}")
    seeds = list(seeds)
    expander = PersonaExpander(per_seed, stage)
    requests = [expander.request(seed, sample_index) for seed in seeds]
    results = await llm.complete_many(requests, progress=progress, desc="persona expand")
    outcome = ExpansionOutcome()
    candidates: list[Persona] = []
    for seed, result in zip(seeds, results):
        if not result.ok or result.parsed is None:
            outcome.failed.append((seed.id, result.error_kind or "empty"))
            continue
        candidates.extend(expander.parse(result.parsed, seed))
    deduped = dedup_personas(candidates, threshold, against=seeds)
    outcome.personas, outcome.dropped = deduped.kept, deduped.dropped
    return outcome
