"""The quality gates a synthesized task passes before it is kept; each verdict carries its reason.

- retrievable: every hop's document is in the top k of the shipped BM25 search
  (`CorpusIndex`, the index `web_search` uses) for the hop's natural query.
- answer_not_in_question: no answer alias appears, as whole words, in the question
  (both SQuAD-normalised, as the qa checker compares them).
- dedup: not the same as a seed or an earlier kept task: the same normalised
  text, the same asked fact reached by the same chain, or word-bigram jaccard at
  or above a threshold (the normalisation and shingles of filters/dedup.py).
- decontaminated: no n-gram shared with a named evaluation set (synth/decontam.py).
- closed_book: a model without tools answers it at most `max_pass_rate` of the
  time (synth/closed_book.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..checks.text import normalize_answer
from ..coa.tools.bm25 import CorpusIndex
from .candidate import Candidate

# In the order they run: the corpus tasks' (expand), then the math/code variants' (math_code.py), which share
# answer_not_in_question.
GATES = ("retrievable", "answer_not_in_question", "dedup", "decontaminated", "closed_book", "written", "computed",
         "consistent")  # fmt: skip


def retrievable(candidate: Candidate, index: CorpusIndex, k: int) -> bool:
    for number, hop in enumerate(candidate.provenance.get("hops", []), 1):
        if not hop.get("doc"):
            continue  # a seed question's own last step: no document of ours holds it
        found = [hit.document.id for hit in index.search(hop["query"], k)]
        if hop["doc"] not in found:
            return candidate.judge(
                "retrievable", False, f"hop {number}: {hop['doc']} not in the top {k} for {hop['query']!r}"
            )
    return candidate.judge(
        "retrievable", True, f"{len(candidate.provenance.get('hops', []))} hops found in the top {k}"
    )


def answer_not_in_question(candidate: Candidate) -> bool:
    question = f" {normalize_answer(candidate.task.question)} "
    for answer in candidate.task.answers:
        norm = normalize_answer(answer)
        if norm and f" {norm} " in question:
            return candidate.judge("answer_not_in_question", False, f"the answer {answer!r} is in the question")
    return candidate.judge("answer_not_in_question", True)


def words(text: str) -> list[str]:
    """filters/dedup.py's normalisation: lower case, runs of anything but letters and digits to one space."""
    return re.sub(r"[^\w]+|_", " ", text.lower()).split()


def shingles(text: str, size: int = 2) -> frozenset[tuple[str, ...]]:
    tokens = words(text)
    return frozenset(tuple(tokens[i : i + size]) for i in range(max(len(tokens) - size + 1, 1)))


@dataclass
class Deduper:
    """Remembers what was kept (and the seeds) and judges each new candidate against it."""

    threshold: float = 0.9
    texts: dict[str, str] = field(default_factory=dict)  # normalised text -> id
    facts: dict[str, str] = field(default_factory=dict)  # asked fact + chain -> id
    shingled: list[tuple[str, frozenset]] = field(default_factory=list)

    def remember(self, task_id: str, text: str, fact: str | None = None) -> None:
        self.texts.setdefault(" ".join(words(text)), task_id)
        if fact:
            self.facts.setdefault(fact, task_id)
        self.shingled.append((task_id, shingles(text)))

    def judge(self, candidate: Candidate) -> bool:
        text, fact = candidate.task.question, fact_key(candidate)
        same = self.texts.get(" ".join(words(text)))
        if same:
            return candidate.judge("dedup", False, f"duplicate of {same}")
        if fact and fact in self.facts:
            return candidate.judge("dedup", False, f"same fact and chain as {self.facts[fact]}")
        mine = shingles(text)
        for other_id, other in self.shingled:
            jaccard = len(mine & other) / max(len(mine | other), 1)
            if jaccard >= self.threshold:
                return candidate.judge("dedup", False, f"near-duplicate of {other_id} (jaccard {jaccard:.2f})")
        return candidate.judge("dedup", True)


def fact_key(candidate: Candidate) -> str | None:
    """What the task asks, whatever its wording: the chain of (entity, relation) its hops walk."""
    hops = candidate.provenance.get("hops") or []
    if not hops or candidate.kind != "depth":
        return None
    return "|".join(f"{hop['entity']}:{hop['relation']}" for hop in hops)
