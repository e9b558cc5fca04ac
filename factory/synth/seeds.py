"""User seed questions made deeper: a corpus entity the question names is replaced by a description.

    seed:   "What is the official language of Peru?"  answers ["Spanish"]
    task:   "What is the official language of the country whose capital is Lima?"

The mention is the longest country or capital name found as whole words in the
question. The answer stays the seed's (the seed says what it is); the hop chain
holds the description's hops and, last, the seed's own question (no document of
ours: the `retrievable` gate checks the hops it can).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from ..corpus.facts import World
from ..errors import FactoryError
from ..tasks import Task, TaskError, load_tasks
from .candidate import Candidate
from .depth import chain, describe, hop_rows, lookups, task_id


def read_seeds(path: Path) -> list[Task]:
    try:
        tasks = load_tasks(path, domain="qa")
    except TaskError as exc:
        raise FactoryError(f"seed file: {exc}") from None
    usable = [task for task in tasks if task.answers]
    if not usable:
        raise FactoryError(f"{path}: no seed question with an answer (rows need a question and an answer)")
    return usable


def mentions(world: World) -> list[tuple[re.Pattern, str]]:
    """(whole-word pattern, entity id) for country and capital names, longest name first."""
    named = sorted((e for e in world.entities.values() if e.kind in ("country", "capital")), key=lambda e: -len(e.name))
    return [(re.compile(rf"(?<!\w){re.escape(e.name)}(?!\w)"), e.id) for e in named if len(e.name) > 3]


def seed_candidate(world: World, seed: Task, patterns: list, rng: random.Random, hops: int) -> Candidate | None:
    for pattern, entity_id in patterns:
        match = pattern.search(seed.question)
        if match is None:
            continue
        links = chain(world, entity_id, hops - 1, rng, frozenset({entity_id}))
        if not links:
            return None
        phrase = describe(world, links, rng)
        question = seed.question[: match.start()] + phrase + seed.question[match.end() :]
        question = question[0].upper() + question[1:]
        final = {"entity": entity_id, "relation": "seed question", "value": seed.answers[0], "doc": None,
                 "query": seed.question}  # fmt: skip
        hop_list = [*hop_rows(links), final]
        provenance = {
            "seed": {"id": seed.id, "question": seed.question, "answers": list(seed.answers), "mention": match.group()},
            "hops": hop_list,
            "documents": list(dict.fromkeys(hop["doc"] for hop in hop_list if hop["doc"])),
        }
        count = lookups(hop_list)
        task = Task(id=task_id("seeded", question), question=question, answers=list(seed.answers), domain="qa",
                    source="synth:seeded", extra={"provenance": provenance, "kind": "seeded", "hops": count})  # fmt: skip
        return Candidate(task, kind="seeded", hops=count, provenance=provenance)
    return None


def seeded_candidates(world: World, seeds: list[Task], min_hops: int, max_hops: int, seed: int) -> list[Candidate]:
    patterns, out = mentions(world), []
    for number, task in enumerate(seeds):
        hops = min_hops + number % (max_hops - min_hops + 1)
        candidate = seed_candidate(world, task, patterns, random.Random(f"{seed}:seeded:{task.id}"), hops)
        if candidate is not None:
            out.append(candidate)
    return out
