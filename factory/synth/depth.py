"""Depth expansion: a question about one entity whose name is replaced by a chain of descriptions.

    "What is the population of Peru?"                                  (the seed: 1 lookup)
    "What is the population of the country whose currency is the currency with ISO 4217 code PEN?"
                                                                       (3 dependent lookups)

`chain(world, entity, k, rng)` finds k descriptions, each true of one entity only,
walking from the asked entity outward and never back to an entity already used.
The hops of a candidate are in the order a solver resolves them: the innermost
description first, the asked fact last; each names the document that states its
fact and a search query that should find it (the `retrievable` gate checks that).
"""

from __future__ import annotations

import hashlib
import random

from ..corpus.facts import World
from ..tasks import Task
from .candidate import Candidate
from .relations import Description, Question, descriptions, questions

ASKED_KINDS = ("country", "country", "country", "capital", "currency", "language", "subdivision")  # countries most


def chain(
    world: World, entity_id: str, k: int, rng: random.Random, visited: frozenset[str]
) -> list[Description] | None:
    """k descriptions, outermost first (the first describes `entity_id`), or None when none reach that deep."""
    if k == 0:
        return []
    options = descriptions(world, world[entity_id])
    rng.shuffle(options)
    for option in options[:8]:  # a few tries per level keep a dead end cheap
        if option.target in visited:
            continue
        if option.target is None:
            if k == 1:
                return [option]
            continue
        rest = chain(world, option.target, k - 1, rng, visited | {option.target})
        if rest is not None:
            return [option, *rest]
    return None


def describe(world: World, links: list[Description], rng: random.Random) -> str:
    """The nested noun phrase for the first description's subject (the name itself when `links` is empty)."""
    if not links:
        return ""
    text = links[-1].value
    for link in reversed(links):
        phrase = rng.choice(link.phrases)
        if text.startswith("the "):  # a nested description brings its own article: no "the the"
            phrase = phrase.replace("the {t}", "{t}")
        text = phrase.replace("{t}", text)
    return text


def lookups(hops: list[dict]) -> int:
    """Dependent lookups: hops read from the same document as the hop before are one lookup."""
    docs = [hop["doc"] for hop in hops]
    return sum(1 for i, doc in enumerate(docs) if doc is None or i == 0 or doc != docs[i - 1])


def hop_rows(links: list[Description]) -> list[dict]:
    return [
        {"entity": link.subject, "relation": link.relation, "value": link.value, "doc": link.doc, "query": link.query}
        for link in reversed(links)
    ]


def final_hop(world: World, entity_id: str, question: Question) -> dict:
    name = world[entity_id].name
    return {"entity": entity_id, "relation": question.attr, "value": question.answers[0], "doc": world[entity_id].doc,
            "query": question.query.replace("{n}", name)}  # fmt: skip


def task_id(kind: str, question: str) -> str:
    return f"synth/{kind}-{hashlib.sha1(question.encode()).hexdigest()[:12]}"


def depth_candidate(world: World, rng: random.Random, hops: int) -> Candidate | None:
    """One k-hop candidate about a random entity, or None when this draw found no chain that deep."""
    kind = rng.choice(ASKED_KINDS)
    pool = sorted(e.id for e in world.kind(kind))
    entity_id = rng.choice(pool)
    asked = questions(world, world[entity_id])
    if not asked:
        return None
    question = rng.choice(asked)
    links = chain(world, entity_id, hops - 1, rng, frozenset({entity_id}))
    if links is None:
        return None
    return make_candidate(world, rng, entity_id, question, links)


def make_candidate(
    world: World, rng: random.Random, entity_id: str, question: Question, links: list[Description]
) -> Candidate:
    phrase = rng.choice(question.phrases)
    name = world[entity_id].name
    text = phrase.replace("{e}", describe(world, links, rng) or name)
    hops = [*hop_rows(links), final_hop(world, entity_id, question)]
    seed_question = phrase.replace("{e}", name)
    provenance = {
        "seed": {"id": task_id("seed", seed_question), "question": seed_question, "answers": list(question.answers)},
        "hops": hops,
        "documents": list(dict.fromkeys(hop["doc"] for hop in hops if hop["doc"])),
    }
    task = Task(id=task_id("depth", text), question=text[0].upper() + text[1:], answers=list(question.answers),
                domain="qa", source="synth:depth", extra={"provenance": provenance, "kind": "depth", "hops": lookups(hops)})  # fmt: skip
    return Candidate(task, kind="depth", hops=lookups(hops), provenance=provenance)


def depth_candidates(world: World, count: int, min_hops: int, max_hops: int, seed: int) -> list[Candidate]:
    """Up to `count` candidates, hop counts spread over min_hops..max_hops (a draw that dead-ends is retried)."""
    out: list[Candidate] = []
    for attempt in range(count * 20):
        if len(out) >= count:
            break
        hops = min_hops + len(out) % (max_hops - min_hops + 1)
        # Facts read from one page are one lookup, so a draw may come out shorter than asked: add descriptions.
        for links in (hops, hops + 1, hops + 2):
            candidate = depth_candidate(world, random.Random(f"{seed}:depth:{attempt}"), links)
            if candidate is None or candidate.hops >= hops:
                break
        if candidate is not None and candidate.hops == hops:
            out.append(candidate)
    return out
