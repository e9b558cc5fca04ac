"""Exact and near-duplicate detection for persona texts.

Exact: equal after normalisation (case, punctuation, whitespace).
Near: Jaccard similarity of word 3-gram sets above a threshold (0.8 by
default). Candidates come from a prefix filter: with every set's shingles
sorted rarest-first, two sets with Jaccard >= t must share a shingle among
the first |s| - ceil(t * |s|) + 1 of each, so only those few are indexed and
no pair that could pass is skipped. That keeps a 100k-persona file fast where
comparing all pairs would not be.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .model import Persona

NEAR_THRESHOLD = 0.8
SHINGLE_WORDS = 3

_APOSTROPHES = re.compile(r"['\u2019]")
_PUNCTUATION = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Lowercase, punctuation removed, whitespace collapsed: the exact-duplicate key."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _PUNCTUATION.sub(" ", _APOSTROPHES.sub("", text))  # "don't" -> "dont", "x-ray" -> "x ray"
    return _SPACES.sub(" ", text).strip()


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[str]:
    """The set of word n-grams of the normalised text (the whole text if it is shorter)."""
    words = normalise_text(text).split()
    if len(words) <= size:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _prefix_length(size: int, threshold: float) -> int:
    # The small epsilon keeps float error (0.8 * 10 = 8.000000000000002) from
    # shortening the prefix, which would miss pairs; a longer prefix is always safe.
    overlap = math.ceil(threshold * size - 1e-9)
    return max(1, min(size, size - overlap + 1))


class _NearIndex:
    """Shingle sets indexed by their rarest shingles, queried for Jaccard > threshold."""

    def __init__(self, threshold: float, frequency: Counter):
        self.threshold = threshold
        self.frequency = frequency
        self.sets: list[frozenset[str]] = []
        self.postings: dict[str, list[int]] = defaultdict(list)

    def _prefix(self, items: frozenset[str]) -> list[str]:
        ordered = sorted(items, key=lambda s: (self.frequency[s], s))
        return ordered[: _prefix_length(len(ordered), self.threshold)]

    def matches(self, items: frozenset[str]) -> list[tuple[int, float]]:
        """(position, similarity) of every indexed set more similar than the threshold."""
        candidates = {pos for s in self._prefix(items) for pos in self.postings.get(s, ())}
        found = []
        for pos in sorted(candidates):
            other = self.sets[pos]
            if min(len(items), len(other)) <= self.threshold * max(len(items), len(other)):
                continue  # sizes alone rule it out
            score = jaccard(items, other)
            if score > self.threshold:
                found.append((pos, score))
        return found

    def add(self, items: frozenset[str]) -> int:
        pos = len(self.sets)
        self.sets.append(items)
        for s in self._prefix(items):
            self.postings[s].append(pos)
        return pos


def _frequencies(sets: Iterable[frozenset[str]]) -> Counter:
    counts: Counter = Counter()
    for items in sets:
        counts.update(items)
    return counts


def near_duplicate_pairs(texts: Sequence[str], threshold: float = NEAR_THRESHOLD) -> list[tuple[int, int, float]]:
    """Every pair (i, j, similarity), i < j, whose 3-gram Jaccard exceeds threshold."""
    sets = [shingles(t) for t in texts]
    index = _NearIndex(threshold, _frequencies(sets))
    pairs = []
    for j, items in enumerate(sets):
        pairs.extend((i, j, score) for i, score in index.matches(items))
        index.add(items)
    return pairs


def exact_duplicate_pairs(texts: Sequence[str]) -> list[tuple[int, int]]:
    """Every (first, later) pair of texts equal after normalisation."""
    first: dict[str, int] = {}
    pairs = []
    for i, text in enumerate(texts):
        key = normalise_text(text)
        if key in first:
            pairs.append((first[key], i))
        else:
            first[key] = i
    return pairs


@dataclass
class Dropped:
    persona: Persona
    reason: str  # e.g. "near duplicate of p0012 (jaccard 0.86)"
    duplicate_of: str  # the id of the persona it duplicates


@dataclass
class DedupResult:
    kept: list[Persona] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def dedup_personas(
    personas: Iterable[Persona], threshold: float = NEAR_THRESHOLD, against: Iterable[Persona] = ()
) -> DedupResult:
    """Keep the first of each group of exact or near duplicates, in input order.

    `against` holds personas already kept elsewhere (e.g. the seeds of an
    expansion): anything duplicating one of them is dropped, and they are not
    returned themselves.
    """
    personas, against = list(personas), list(against)
    sets = [shingles(p.text) for p in against + personas]
    index = _NearIndex(threshold, _frequencies(sets))
    owners: list[str] = []  # index position -> persona id
    seen: dict[str, str] = {}  # normalised text -> persona id
    for persona, items in zip(against, sets):
        seen.setdefault(normalise_text(persona.text), persona.id)
        index.add(items)
        owners.append(persona.id)
    result = DedupResult()
    for persona, items in zip(personas, sets[len(against) :]):
        key = normalise_text(persona.text)
        if key in seen:
            result.dropped.append(Dropped(persona, f"exact duplicate of {seen[key]}", seen[key]))
            continue
        near = index.matches(items)
        if near:
            pos, score = max(near, key=lambda m: (m[1], -m[0]))  # the closest, earliest on ties
            reason = f"near duplicate of {owners[pos]} (jaccard {score:.2f})"
            result.dropped.append(Dropped(persona, reason, owners[pos]))
            continue
        seen[key] = persona.id
        index.add(items)
        owners.append(persona.id)
        result.kept.append(persona)
    return result
