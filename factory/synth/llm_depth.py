"""Depth expansion over any local corpus: a seed question's entity replaced by LLM-written descriptions, chained.

    factory tasks expand --corpus my_corpus.jsonl --seeds seeds.jsonl --depth 3 --model M --out tasks.jsonl

    seed:   "When was the construction of the Charles Bridge completed?"        answers ["1402"]
    hop 1:  "Charles Bridge" -> "the stone bridge that crosses the Vltava"     (its page's evidence sentence)
    hop 2:  "Vltava" -> "the longest river within the Czech Republic"          (the anchor of hop 1, described)
    task:   "When was the construction of the stone bridge that crosses the longest river within the Czech
             Republic completed?"                                              answers ["1402"], unchanged

The geo path (depth.py) builds its descriptions from structured facts; a user's corpus
(id, title, text: what the shipped BM25 `web_search` reads) has only pages, so a model reads
the entity's page and writes the description (describe_role.py). Nothing it says is taken on
its word; per hop, each verdict with its reason on the Candidate:

- entity_page: the entity is a span of the text (longest capitalised spans first) whose BM25
  search returns a page titled as the span, case-insensitive; no LLM is asked to pick it.
- written: the describer replied within its bounds (a failed or garbage reply drops the candidate).
- evidence_on_page: the evidence sentence is on the page (whitespace-normalised).
- name_hidden: no word of the entity's name (nor of an entity described before it) is in the
  description or the query; a title word the page also writes in lower case ("river") is a common
  noun, not the name.
- retrievable: the page is in the top k of the shipped search for the describer's query.

The next hop's entity is the description's anchor: a span of the description, also in the
evidence, with a page not used yet. `--depth K` counts lookups as the geo path does: up to K-1
descriptions and, last, the seed's own question. A chain whose description names no further
entity with a page stops there (kept when it reaches `--min-depth`). The kept candidates then pass
expand.py's gates (answer_not_in_question, retrievable over the whole chain, dedup,
decontaminated, closed_book) and are written as geo tasks are (outputs.write_outputs).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..coa.tools.bm25 import STOPWORDS, CorpusIndex, Document
from ..errors import FactoryError
from ..llm import LLMClient
from ..run import open_run
from ..tasks import Task
from .candidate import Candidate
from .closed_book import closed_book_gate
from .decontam import EvalNgrams
from .depth import lookups, task_id
from .describe_role import DescribeRole, Description
from .expand import ExpandConfig, ExpandResult, cheap_gates, open_index
from .gates import Deduper, words
from .seeds import read_seeds

if TYPE_CHECKING:
    from ..run_config import FactoryConfig

KIND = "llm_depth"
CONNECTORS = {"of", "the", "de", "la", "le", "von", "van", "upon", "and"}  # inside a name: "Bank of England"
MAX_SPAN_WORDS = 6
MAX_SPANS = 8  # BM25 searches per entity: a long question's shorter spans are rarely its subject
TOKEN = re.compile(r"[\w'’-]+")


@dataclass
class Expansion:
    client: LLMClient
    index: CorpusIndex
    config: ExpandConfig


@dataclass
class Chain:
    """One seed on its way: the question as rewritten so far and what its hops used."""

    seed: Task
    text: str
    where: tuple[int, int]  # the span of `text` the next description replaces
    page: Document
    mention: str
    used: set[str] = field(default_factory=set)  # page ids in the chain
    hidden: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # (title, its name words)


def spans(text: str) -> list[tuple[int, int]]:
    """Runs of capitalised words ("Charles Bridge", "Bank of England") and their sub-runs, longest first."""
    tokens = [(m.start(), m.end(), m.group()) for m in TOKEN.finditer(text)]
    found = set()
    for i, (start, _, word) in enumerate(tokens):
        if not word[0].isupper():
            continue
        for j in range(i, min(i + MAX_SPAN_WORDS, len(tokens))):
            if j > i and text[tokens[j - 1][1] : tokens[j][0]].strip():
                break  # punctuation between two words ends a name
            if tokens[j][2][0].isupper():
                found.add((start, tokens[j][1]))
            elif tokens[j][2].lower() not in CONNECTORS:
                break
    return sorted(found, key=lambda span: (span[0] - span[1], span[0]))[:MAX_SPANS]


def named_page(
    index: CorpusIndex, text: str, candidates: list[tuple[int, int]], used: set[str], k: int
) -> tuple[tuple[int, int] | None, Document | None, list[str]]:
    """The first span whose search returns a page titled as it (not used yet), or (None, None, the misses)."""
    misses = []
    for start, end in candidates:
        name = text[start:end]
        hits = [hit.document for hit in index.search(name, k)]
        page = next((doc for doc in hits if doc.title.strip().casefold() == name.casefold()), None)
        if page is not None and page.id not in used:
            return (start, end), page, misses
        misses.append(f"{name!r} -> " + ("already in the chain" if page else repr(hits[0].title) if hits else "no hit"))
    return None, None, misses


def name_words(title: str, page_text: str) -> frozenset[str]:
    """Words that name the entity: the title's, less stopwords and words its page also writes in lower case."""
    common = {token for token in TOKEN.findall(page_text) if token.islower()}
    named = frozenset(w for w in words(title) if w not in STOPWORDS and w not in common)
    return named or frozenset({" ".join(words(title))})  # a title of common words ("The Bridge") as a phrase


def leaked(text: str, hidden: list[tuple[str, frozenset[str]]]) -> tuple[str, str] | None:
    """(the word, the entity it names) for the first name word in `text`, or None."""
    tokens = words(text)
    joined = f" {' '.join(tokens)} "
    for title, named in hidden:
        for word in sorted(named):
            if (f" {word} " in joined) if " " in word else word in tokens:
                return word, title
    return None


def judge_hop(candidate: Candidate, gate: str, passed: bool, reason: str) -> bool:
    """One verdict per gate: a pass adds this hop's reason to the earlier hops', a drop says only its own."""
    before = candidate.verdicts.get(gate)
    if passed and before:
        reason = f"{before[1]}; {reason}"
    return candidate.judge(gate, passed, reason)


def evidence_on_page(description: Description, page: Document) -> tuple[bool, str]:
    if description.evidence in " ".join(page.text.split()):
        return True, f"on page {page.id}"
    return False, f"evidence not on the page: {page.id} does not hold {description.evidence[:100]!r}"


def name_hidden(description: Description, chain: Chain) -> tuple[bool, str]:
    for part, text in (("description", description.text), ("query", description.query)):
        leak = leaked(text, chain.hidden)
        if leak:
            return False, f"name in the {part}: {leak[0]!r} names {leak[1]!r} in {text!r}"
    return True, f"{chain.page.title!r} not named"


def found(description: Description, page: Document, index: CorpusIndex, k: int) -> tuple[bool, str]:
    ids = [hit.document.id for hit in index.search(description.query, k)]
    if page.id in ids:
        return True, f"{page.id} at rank {ids.index(page.id) + 1} for {description.query!r}"
    return False, f"page not found: {page.id} not in the top {k} for {description.query!r}"


async def describe_hop(candidate: Candidate, chain: Chain, number: int, run: Expansion) -> Description | None:
    """Ask the describer about `chain.page`, record the hop, judge it; None when a gate dropped it."""
    role, page = DescribeRole(), chain.page
    avoid = [title for title, _ in chain.hidden]
    result = await run.client.run(role.request(chain.seed.id, number, page.title, page.text, avoid))
    if not result.ok:
        judge_hop(candidate, "written", False, f"{result.error_kind}: {result.error or 'no reply'}"[:300])
        return None
    reply = role.parse(result.parsed)
    candidate.provenance["hops"].append({
        "entity": page.title, "relation": "description", "value": page.title, "doc": page.id, "query": reply.query,
        "description": reply.text, "evidence": reply.evidence, "mention": chain.mention, "request": result.request_hash,
    })  # fmt: skip
    passed = (
        judge_hop(candidate, "written", True, f"page {page.id}")
        and judge_hop(candidate, "evidence_on_page", *evidence_on_page(reply, page))
        and judge_hop(candidate, "name_hidden", *name_hidden(reply, chain))
        and judge_hop(candidate, "retrievable", *found(reply, page, run.index, run.config.top_k))
    )
    return reply if passed else None


def splice(text: str, where: tuple[int, int], phrase: str) -> tuple[str, tuple[int, int]]:
    """`text` with the span replaced by `phrase` (no "the the"), and where the phrase now sits."""
    start, end = where
    if re.match(r"(?i)(the|a|an) ", phrase) and re.search(r"(?i)\bthe $", text[:start]):
        start -= 4
    return text[:start] + phrase + text[end:], (start, start + len(phrase))


def next_entity(chain: Chain, description: Description, run: Expansion) -> bool:
    """Point the chain at the description's anchor: a span also in the evidence, with a page; False if none."""
    offset, phrase = chain.where[0], chain.text[chain.where[0] : chain.where[1]]
    evidence = description.evidence.casefold()
    anchors = [span for span in spans(phrase) if phrase[span[0] : span[1]].casefold() in evidence]
    span, page, _ = named_page(run.index, phrase, anchors, chain.used, run.config.top_k)
    if page is None:
        return False
    chain.where, chain.page, chain.mention = (offset + span[0], offset + span[1]), page, phrase[span[0] : span[1]]
    chain.used.add(page.id)
    chain.hidden.append((page.title, name_words(page.title, page.text)))
    return True


async def described(seed: Task, run: Expansion) -> Candidate:
    """One seed made deeper, as a Candidate with every verdict so far (a dropped one says where it stopped)."""
    seed_info = {"id": seed.id, "question": seed.question, "answers": list(seed.answers)}
    candidate = Candidate(seed, kind=KIND, provenance={"seed": seed_info, "hops": []})
    span, page, misses = named_page(run.index, seed.question, spans(seed.question), set(), run.config.top_k)
    if page is None:
        reason = "no page title matches a span: " + ("; ".join(misses[:4]) or "no capitalised span")
        candidate.judge("entity_page", False, reason)
        return finish(candidate, seed, seed.question)
    seed_info["mention"] = seed.question[span[0] : span[1]]
    chain = Chain(seed, seed.question, span, page, seed_info["mention"], {page.id})
    chain.hidden.append((page.title, name_words(page.title, page.text)))
    candidate.judge("entity_page", True, f"{seed_info['mention']!r} is page {page.id}")
    for number in range(1, run.config.depth):
        reply = await describe_hop(candidate, chain, number, run)
        if reply is None:
            return finish(candidate, seed, chain.text)
        chain.text, chain.where = splice(chain.text, chain.where, reply.text)
        if number + 1 < run.config.depth and not next_entity(chain, reply, run):
            break
    made = len(candidate.provenance["hops"])
    if made + 1 < run.config.min_depth:
        candidate.judge("entity_page", False, f"chain too short: {made} descriptions, no further entity with a "
                        f"page in {reply.text!r} (--min-depth {run.config.min_depth})")  # fmt: skip
    leak = leaked(chain.text, chain.hidden)  # the seed may name the entity twice: one mention was replaced
    if leak:
        candidate.judge("name_hidden", False, f"name in the question: {leak[0]!r} names {leak[1]!r}")
    return finish(candidate, seed, chain.text)


def finish(candidate: Candidate, seed: Task, text: str) -> Candidate:
    """The task as rewritten, and the hop chain in the order a solver resolves it: innermost first, the seed last."""
    made = candidate.provenance["hops"]
    final = {"entity": made[0]["entity"] if made else None, "relation": "seed question", "value": seed.answers[0],
             "doc": None, "query": seed.question}  # fmt: skip
    hops = [*reversed(made), final]
    provenance = {**candidate.provenance, "hops": hops, "documents": [hop["doc"] for hop in hops if hop["doc"]]}
    question = text[0].upper() + text[1:]
    candidate.hops, candidate.provenance = lookups(hops), provenance
    candidate.task = Task(id=task_id(KIND, question), question=question, answers=list(seed.answers), domain="qa",
                          source=f"synth:{KIND}", extra={"provenance": provenance, "kind": KIND, "hops": candidate.hops})  # fmt: skip
    return candidate


async def expand_described(config: ExpandConfig, client: LLMClient, index: CorpusIndex) -> ExpandResult:
    """Each seed made deeper, then the cheap gates; batches of seeds until `count` pass them or none are left."""
    check(config)
    seeds, run = read_seeds(config.seeds), Expansion(client, index, config)
    evals = EvalNgrams.load(config.decontaminate, config.ngrams) if config.decontaminate else None
    deduper, result, kept = Deduper(threshold=config.dedup_threshold), ExpandResult(), 0
    for task in seeds:
        deduper.remember(task.id, task.question)
    while seeds and kept < config.count:
        batch, seeds = seeds[: config.count - kept], seeds[config.count - kept :]
        for candidate in await asyncio.gather(*(described(seed, run) for seed in batch)):
            result.candidates.append(candidate)
            kept += candidate.kept and cheap_gates(candidate, index, deduper, config, evals)
    return result


def check(config: ExpandConfig) -> None:
    if config.seeds is None:
        raise FactoryError("--corpus FILE with --model needs --seeds (the questions to make deeper)")
    if config.min_depth > config.depth:
        raise FactoryError(f"--min-depth {config.min_depth} is above --depth {config.depth}")
    if config.width:
        raise FactoryError("--width composes geo facts; over your own corpus only depth expansion runs")


def expand_over_corpus(config: ExpandConfig, run_config: FactoryConfig) -> ExpandResult:
    """The command's entry: the run folder's store keeps every describer call, so a rerun asks nothing again."""
    check(config)
    index = open_index(config.corpus)
    try:
        with open_run(run_config.run_dir, "expand", run_config) as run:
            result = asyncio.run(ask(config, run_config, run, index))
    finally:
        index.close()
    closed_book_gate([candidate for candidate in result.candidates if candidate.kept], config.closed_book)
    return result


async def ask(config: ExpandConfig, run_config: FactoryConfig, run, index: CorpusIndex) -> ExpandResult:
    async with LLMClient(run_config.llm, run.store, run.run_id) as client:
        return await expand_described(config, client, index)
