"""Each synthesis gate drops what it should, with its reason; the decontaminate filter kind on a real store."""

from __future__ import annotations

import json

import pytest
from filter_rows import add_coa, kept, verdicts, write_config
from loopback_server import ok

from factory.coa.tools.bm25 import CorpusIndex
from factory.coa.tools.config import LocalCorpusConfig
from factory.corpus import build_corpus
from factory.filters import run_filters
from factory.store import Store
from factory.synth.candidate import Candidate
from factory.synth.closed_book import ClosedBookConfig, closed_book_gate
from factory.synth.decontam import EvalNgrams
from factory.synth.gates import Deduper, answer_not_in_question, retrievable
from factory.tasks import Task

BENCH = "Which river flows through the capital city of the country whose currency is the sol and into the Pacific?"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    corpus = build_corpus(tmp_path_factory.mktemp("corpus") / "geo.jsonl")
    opened = CorpusIndex.open(LocalCorpusConfig(path=corpus))
    yield opened
    opened.close()


def candidate(question: str, answers: list[str], hops: list[dict] | None = None, task_id: str = "t1") -> Candidate:
    task = Task(id=task_id, question=question, answers=answers, domain="qa", source="synth:depth")
    return Candidate(task, kind="depth", hops=len(hops or []), provenance={"hops": hops or []})


def hop(doc: str, query: str, entity: str = "country/PER", relation: str = "population") -> dict:
    return {"entity": entity, "relation": relation, "value": "x", "doc": doc, "query": query}


def test_retrievable_checks_every_hop_with_the_shipped_index(index):
    good = candidate("q", ["a"], [hop("capital/PER", "Lima capital"), hop("country/PER", "Peru population")])
    assert retrievable(good, index, 5) and good.verdicts["retrievable"][0]
    bad = candidate("q", ["a"], [hop("capital/PER", "Lima capital"), hop("country/PER", "ocean tides")])
    assert not retrievable(bad, index, 5)
    assert bad.verdicts["retrievable"] == (False, "hop 2: country/PER not in the top 5 for 'ocean tides'")
    assert bad.dropped_by == "retrievable" and not bad.kept


def test_answer_in_the_question_is_dropped():
    leaky = candidate("What is the population of Peru (30,814,175 people)?", ["30814175", "30,814,175"])
    assert not answer_not_in_question(leaky) and "is in the question" in leaky.verdicts["answer_not_in_question"][1]
    fine = candidate("What is the ISO code of the Sol?", ["PEN"])  # "pen" is no word of the question
    assert answer_not_in_question(fine)


def test_dedup_drops_exact_same_fact_and_near_copies_naming_the_first():
    deduper = Deduper(threshold=0.8)
    deduper.remember("seed-1", "What is the population of Peru?")
    copy = candidate("what is the population of PERU", ["1"])
    assert not deduper.judge(copy) and copy.verdicts["dedup"][1] == "duplicate of seed-1"
    first = candidate("What is the area of the country whose capital is Lima in square kilometres?", ["1"],
                      [hop("capital/PER", "q", "country/PER", "capital"), hop("country/PER", "q", "country/PER", "area")])  # fmt: skip
    assert deduper.judge(first)
    deduper.remember("t1", first.task.question, "country/PER:capital|country/PER:area")
    reworded = candidate(
        "How many km2 does the country with Lima as its capital cover?", ["1"], first.provenance["hops"]
    )
    assert not deduper.judge(reworded) and reworded.verdicts["dedup"][1] == "same fact and chain as t1"
    near = candidate("What is the area of the country whose capital is Lima in square kilometres ?!", ["1"])
    assert not deduper.judge(near) and deduper.judge(candidate("Name the currency of Chile.", ["peso"]))


def eval_file(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text(json.dumps({"question": BENCH, "answers": ["the Rimac river"]}) + "\n")
    return path


def test_decontaminated_drops_overlap_with_an_evaluation_set_as_datatrove_does(tmp_path):
    evals = EvalNgrams.load([eval_file(tmp_path)], n=12)
    # The tail of the benchmark question followed by its answer: one of datatrove's overlap n-grams.
    leaked = candidate("Tell me: whose currency is the SOL, and into the Pacific?", ["The Rímac river!"])
    assert not evals.judge(leaked)
    assert leaked.verdicts["decontaminated"][1].startswith("contaminated: bench (")
    # The question alone matches nothing: datatrove indexes only n-grams that hold answer words.
    assert evals.judge(candidate(BENCH, ["Lima"]))


def test_closed_book_gate_uses_pass_rates_and_records_not_run(server, fast_config, tmp_path):
    easy, hard = candidate("What is the capital of Peru?", ["Lima"], task_id="easy"), candidate("Hard one?", ["42"])
    server.route("capital of Peru", *[ok("<answer>Lima</answer>")] * 4)
    config = ClosedBookConfig(model="loopback", base_url=server.base_url, samples=4, run_dir=tmp_path / "cb")
    closed_book_gate([easy, hard], config)
    assert easy.verdicts["closed_book"] == (False, "closed-book pass rate 1.00 (4/4, loopback) > 0.3")
    assert hard.verdicts["closed_book"][0] and not hard.not_run
    unjudged = candidate("Another?", ["x"], task_id="other")
    closed_book_gate([unjudged], None)
    assert unjudged.kept and unjudged.not_run == {"closed_book": "no closed-book model given (--closed-book-model)"}


def test_decontaminate_filter_kind_on_a_real_store(tmp_path):
    run = tmp_path / "run"
    with Store.open(run) as store:
        add_coa(store, "coa:a1", "Which river runs whose currency is the sol and into the Pacific?", 1,
                final_answer="the Rimac river")  # fmt: skip
        add_coa(store, "coa:a2", "What is the capital of Chile?", 2, final_answer="Santiago")
    config = write_config(tmp_path, f"filters: [{{name: d, kind: decontaminate, sets: [{eval_file(tmp_path)}]}}]")
    run_filters(run, config)
    assert kept(run, "d") == {"coa:a2"}
    assert verdicts(run, "d")["coa:a1"][1].startswith("contaminated: bench (")
