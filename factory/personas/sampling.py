"""Deterministic persona sampling.

Each persona gets a key, SHA-256 of (seed, id, text), and a sample is the n
smallest keys. So the same seed picks the same personas in every process
(no dependence on PYTHONHASHSEED or on the order the personas were loaded
in), and a sample of n is the first n of a sample of n + 1.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from ..errors import FactoryError
from .model import Persona


def sample_key(seed: int | str, persona: Persona) -> bytes:
    payload = "\x1f".join((str(seed), persona.id, persona.text))
    return hashlib.sha256(payload.encode("utf-8")).digest()


def sample_personas(personas: Sequence[Persona], n: int, seed: int | str = 0) -> list[Persona]:
    """n distinct personas (without replacement), in a seed-determined order.

    Asking for more than there are is an error, not a silent short sample.
    """
    if n < 0:
        raise FactoryError(f"cannot sample {n} personas: n must be 0 or more")
    if n > len(personas):
        raise FactoryError(
            f"asked for {n} personas but only {len(personas)} are loaded "
            "(sampling is without replacement; lower n or add personas)"
        )
    # The position breaks ties between identical (id, text) entries, keeping the order total.
    ranked = sorted(range(len(personas)), key=lambda i: (sample_key(seed, personas[i]), i))
    return [personas[i] for i in ranked[:n]]
