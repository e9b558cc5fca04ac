"""`expand`: make candidates (depth, width, seeded), run the gates, keep what passes, say why the rest went.

    result = expand(ExpandConfig(depth=4, width=3, count=30))
    result.kept          # Candidates that passed every gate that ran
    result.summary()     # counts per gate, hop histogram, per kind (the report and the benchmark use it)

The cheap gates run per candidate in order (answer_not_in_question, retrievable,
dedup, decontaminated) and stop at the first that drops it; the closed-book gate
costs model calls, so it runs last, once, over the survivors. Candidates are made
until `count` survive the cheap gates or `count * 10` were made.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from ..coa.tools.bm25 import CorpusError, CorpusIndex
from ..coa.tools.config import LocalCorpusConfig
from ..config import StrictModel
from ..corpus import load_world, resolve_corpus
from ..errors import FactoryError
from .candidate import Candidate
from .closed_book import ClosedBookConfig, closed_book_gate
from .decontam import EvalNgrams
from .depth import depth_candidates
from .gates import GATES, Deduper, answer_not_in_question, fact_key, retrievable
from .seeds import read_seeds, seeded_candidates
from .width import width_candidates

# The funnel's order: the per-hop gates of depth over a user's corpus (llm_depth.py) run before the shared ones.
FUNNEL = ("entity_page", "written", "evidence_on_page", "name_hidden", *(gate for gate in GATES if gate != "written"))


class ExpandConfig(StrictModel):
    corpus: str = Field("geo", description="'geo' (the built corpus) or a JSONL/parquet file holding its documents")
    seeds: Path | None = Field(
        None,
        description="QA seed questions that name a country or capital (geo) or an "
        "entity with a page (your corpus, with a model: llm_depth.py)",
    )
    depth: int = Field(4, ge=1, le=6, description="most dependent lookups of a depth task")
    min_depth: int = Field(2, ge=1, le=6)
    width: int = Field(0, ge=0, le=6, description="sub-questions of a width task; 0: no width tasks")
    width_share: float = Field(0.3, ge=0, le=1, description="share of made candidates that are width tasks")
    count: int = Field(20, ge=1, description="tasks to keep (before the closed-book gate)")
    seed: int = 0
    top_k: int = Field(5, ge=1, description="a hop's document must be in this many search results")
    dedup_threshold: float = Field(0.9, gt=0, le=1, description="word-bigram jaccard of a near-duplicate")
    decontaminate: list[Path] = Field(default_factory=list, description="evaluation sets (task files)")
    ngrams: int = Field(12, ge=3, le=50, description="n-gram size of decontamination (datatrove's default)")
    closed_book: ClosedBookConfig | None = None


@dataclass
class ExpandResult:
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def kept(self) -> list[Candidate]:
        return [c for c in self.candidates if c.kept]

    def summary(self) -> dict:
        dropped = Counter(c.dropped_by for c in self.candidates if not c.kept)
        reasons: dict[str, Counter] = {}
        for c in self.candidates:
            if not c.kept:
                reasons.setdefault(c.dropped_by, Counter())[reason_kind(c)] += 1
        return {
            "made": len(self.candidates),
            "dropped": {gate: dropped.get(gate, 0) for gate in FUNNEL if gate in dropped},
            "dropped_by_reason": {gate: dict(r.most_common()) for gate, r in reasons.items()},
            "kept": len(self.kept),
            "not_run": dict(Counter(g for c in self.candidates for g in c.not_run)),
            "hops_kept": dict(sorted(Counter(c.hops for c in self.kept).items())),
            "hops_made": dict(sorted(Counter(c.hops for c in self.candidates).items())),
            "by_kind": {
                kind: {
                    "made": sum(c.kind == kind for c in self.candidates),
                    "kept": sum(c.kind == kind and c.kept for c in self.candidates),
                }
                for kind in sorted({c.kind for c in self.candidates})
            },
        }

    def funnel(self) -> str:
        s = self.summary()
        steps = " -> ".join(f"{gate} -{n}" for gate, n in s["dropped"].items())
        line = f"expand: {s['made']} made -> {steps + ' -> ' if steps else ''}{s['kept']} kept"
        return line + "".join(f"; {gate} not run" for gate in s["not_run"])


def reason_kind(candidate: Candidate) -> str:
    """A reason without its particulars, to count by: the relation of the hop not found, 'near-duplicate', ..."""
    _, reason = candidate.verdicts[candidate.dropped_by]
    if candidate.dropped_by == "retrievable" and reason.startswith("hop "):
        number = int(reason.split(":")[0].split()[1])
        return f"hop not found: {candidate.provenance['hops'][number - 1]['relation']}"
    if candidate.dropped_by == "answer_not_in_question":
        return "answer in the question"
    if candidate.dropped_by == "closed_book":
        return "answered closed-book"
    return reason.split(" of ")[0].split(" as ")[0].split(" (")[0].split(":")[0]  # "duplicate", "contaminated", ...


def open_index(corpus: str) -> CorpusIndex:
    path = resolve_corpus(corpus)
    try:
        return CorpusIndex.open(LocalCorpusConfig(path=path))
    except CorpusError as exc:
        raise FactoryError(str(exc)) from None


def make(config: ExpandConfig, round_number: int, want: int) -> list[Candidate]:
    world, seed = load_world(), config.seed * 1000 + round_number
    made: list[Candidate] = []
    n_width = round(want * config.width_share) if config.width >= 2 else 0
    if config.depth >= config.min_depth:
        made += depth_candidates(world, want - n_width, config.min_depth, config.depth, seed)
    if n_width:
        made += width_candidates(world, n_width, config.width, seed)
    random.Random(seed).shuffle(made)
    return made


def cheap_gates(
    candidate: Candidate, index: CorpusIndex, deduper: Deduper, config: ExpandConfig, evals: EvalNgrams | None
) -> bool:
    if not (answer_not_in_question(candidate) and retrievable(candidate, index, config.top_k)):
        return False
    if not deduper.judge(candidate):
        return False
    if evals is None:
        candidate.skip("decontaminated", "no evaluation set named (--decontaminate)")
    elif not evals.judge(candidate):
        return False
    deduper.remember(candidate.task.id, candidate.task.question, fact_key(candidate))
    return True


def expand(config: ExpandConfig) -> ExpandResult:
    if config.min_depth > config.depth:
        raise FactoryError(f"--min-depth {config.min_depth} is above --depth {config.depth}")
    index = open_index(config.corpus)
    evals = EvalNgrams.load(config.decontaminate, config.ngrams) if config.decontaminate else None
    deduper, result = Deduper(threshold=config.dedup_threshold), ExpandResult()
    seeds = read_seeds(config.seeds) if config.seeds else []
    for task in seeds:
        deduper.remember(task.id, task.question)
    pending = seeded_candidates(load_world(), seeds, config.min_depth, config.depth, config.seed) if seeds else []
    survivors: list[Candidate] = []
    round_number = 0
    while len(survivors) < config.count and len(result.candidates) < config.count * 10:
        batch = pending or make(config, round_number, config.count - len(survivors))
        pending, round_number = [], round_number + 1
        if not batch:
            break
        for candidate in batch:
            if len(survivors) >= config.count:
                break
            seed_info = candidate.provenance.get("seed") or {}
            if seed_info.get("question"):  # generated seeds count as seeds for dedup too
                deduper.remember(seed_info.get("id", "seed"), seed_info["question"])
            result.candidates.append(candidate)
            if cheap_gates(candidate, index, deduper, config, evals):
                survivors.append(candidate)
    index.close()
    closed_book_gate(survivors, config.closed_book)
    return result
