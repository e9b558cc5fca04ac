"""Personas: the shipped library, user files, LLM expansion, dedup and sampling.

from factory.personas import load_library, load_personas, sample_personas
personas = load_library() + load_personas("persona.jsonl")  # Persona Hub files work as they are
batch = sample_personas(dedup_personas(personas).kept, 100, seed=7)
"""

from .dedup import (
    NEAR_THRESHOLD,
    DedupResult,
    Dropped,
    dedup_personas,
    exact_duplicate_pairs,
    jaccard,
    near_duplicate_pairs,
    normalise_text,
    shingles,
)
from .expand import EXPAND_SOURCE, MAX_PER_SEED, ExpansionOutcome, RelatedPersonas, expand_personas
from .library import LIBRARY_SOURCE, library_path, load_library
from .loaders import MAX_PERSONA_CHARS, PersonaList, load_personas
from .model import Persona, text_id
from .sampling import sample_personas
from .store import save_personas, stored_personas

__all__ = [
    "EXPAND_SOURCE", "LIBRARY_SOURCE", "MAX_PERSONA_CHARS", "MAX_PER_SEED", "NEAR_THRESHOLD", "DedupResult",
    "Dropped", "ExpansionOutcome", "Persona", "PersonaList", "RelatedPersonas", "dedup_personas", "exact_duplicate_pairs", "expand_personas",
    "jaccard", "library_path", "load_library", "load_personas", "near_duplicate_pairs", "normalise_text",
    "sample_personas", "save_personas", "shingles", "stored_personas", "text_id",
]  # fmt: skip
