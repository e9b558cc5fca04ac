"""Width expansion: n sub-questions about different countries composed into one task with one answer.

    "What is the combined population of the country whose capital is Lima and the
     country whose currency is the Lao Kip?"                       (4 lookups, answer: a sum)
    "Of the countries whose capitals are Quito, Minsk and Accra, which covers the largest area?"

The combined answer is computed from the facts (a sum, a difference, which one is
largest or smallest), so it is exact and checkable like any other QA answer. A
"which one" task never names its countries (the answer would be in the question):
each is described by a one-hop description instead.
"""

from __future__ import annotations

import random

from ..corpus.facts import World
from ..tasks import Task
from .candidate import Candidate
from .depth import chain, describe, final_hop, hop_rows, lookups, task_id
from .relations import number_aliases, questions

ATTRS = {"population": "population", "area": "area in square kilometres"}
PICK_WORDS = {("population", max): "the largest population", ("population", min): "the smallest population",
              ("area", max): "the largest area", ("area", min): "the smallest area"}  # fmt: skip


def item(world: World, rng: random.Random, country_id: str, attr: str, describe_it: bool) -> dict | None:
    """One sub-question: the country's phrase (its name, or a one-hop description) and its hops."""
    question = next((q for q in questions(world, world[country_id]) if q.attr == attr), None)
    if question is None:
        return None
    links = chain(world, country_id, 1, rng, frozenset({country_id})) if describe_it else []
    if links is None:
        return None
    hops = [*hop_rows(links), final_hop(world, country_id, question)]
    phrase = describe(world, links, rng) or world[country_id].name
    return {"id": country_id, "phrase": phrase, "value": world[country_id].attrs[attr], "hops": hops}


def compose(world: World, rng: random.Random, items: list[dict], attr: str) -> tuple[str, list[str], str]:
    """(question, answers, operation) over the items' values."""
    words = ATTRS[attr]
    # Named countries first: "the country whose capital is Saint Helier and Iceland" reads as one country.
    ordered = sorted(items, key=lambda i: i["phrase"].startswith("the "))
    listed = ", ".join(i["phrase"] for i in ordered[:-1]) + " and " + ordered[-1]["phrase"]
    op = rng.choice(["sum", "pick"] + (["difference"] if len(items) == 2 else []))
    if op == "sum":
        total = sum(i["value"] for i in items)
        return f"What is the combined {words.split(' in ')[0]} of {listed}?", list(number_aliases(total)), op
    if op == "difference":
        a, b = sorted(items, key=lambda i: -i["value"])
        text = f"By how much does the {words} of {a['phrase']} exceed that of {b['phrase']}?"
        return text, list(number_aliases(a["value"] - b["value"])), op
    which = rng.choice([max, min])
    best = which(items, key=lambda i: i["value"])
    text = f"Which of these has {PICK_WORDS[(attr, which)]}: {listed}? Answer with the country's name."
    return text, [world[best["id"]].name], f"pick_{which.__name__}"


def width_candidate(world: World, rng: random.Random, n: int) -> Candidate | None:
    attr = rng.choice(sorted(ATTRS))
    pool = sorted(c.id for c in world.kind("country") if c.attrs.get(attr))
    chosen = rng.sample(pool, n)
    values = [world[c].attrs[attr] for c in chosen]
    if len(set(values)) < n:
        return None  # a tie makes "which is largest" ambiguous
    items = [item(world, rng, c, attr, describe_it=rng.random() < 0.7) for c in chosen]
    if any(i is None for i in items):
        return None
    question, answers, op = compose(world, rng, items, attr)
    if op.startswith("pick") and any(i["phrase"] == world[i["id"]].name for i in items):
        items = [item(world, rng, c, attr, describe_it=True) for c in chosen]  # names would give the answer away
        if any(i is None for i in items):
            return None
        question, answers, op = compose(world, random.Random(rng.random()), items, attr)
        if not op.startswith("pick"):
            return None
    hops = [hop for i in items for hop in i["hops"]]
    provenance = {
        "seed": {"sub_questions": [{"entity": i["id"], "attr": attr, "value": i["value"]} for i in items]},
        "operation": op,
        "hops": hops,
        "documents": list(dict.fromkeys(hop["doc"] for hop in hops)),
    }
    count = sum(lookups(i["hops"]) for i in items)
    task = Task(id=task_id("width", question), question=question, answers=answers, domain="qa", source="synth:width",
                extra={"provenance": provenance, "kind": "width", "hops": count})  # fmt: skip
    return Candidate(task, kind="width", hops=count, provenance=provenance)


def width_candidates(world: World, count: int, n: int, seed: int) -> list[Candidate]:
    out: list[Candidate] = []
    for attempt in range(count * 10):
        if len(out) >= count:
            break
        candidate = width_candidate(world, random.Random(f"{seed}:width:{attempt}"), n)
        if candidate is not None:
            out.append(candidate)
    return out
