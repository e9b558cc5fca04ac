"""Task synthesis over the geo corpus: real corpus build, real BM25 index, the qa checker, the CLI end to end."""

from __future__ import annotations

import json

import pytest

from factory.checks.text import exact_match
from factory.cli import main
from factory.coa.tools.bm25 import CorpusIndex
from factory.coa.tools.config import LocalCorpusConfig
from factory.corpus import build_corpus, corpus_documents, load_world
from factory.synth.expand import ExpandConfig, expand
from factory.tasks import load_tasks


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(tmp_path_factory.mktemp("corpus") / "geo.jsonl")


@pytest.fixture(scope="module")
def result(corpus):
    return expand(ExpandConfig(corpus=str(corpus), depth=4, width=3, count=30, seed=3))


def test_corpus_is_deterministic_and_names_its_links(corpus):
    assert corpus_documents() == [json.loads(line) for line in corpus.open()]
    pages = {page["id"]: page for page in corpus_documents()}
    assert 900 < len(pages) < 2000
    peru = pages["country/PER"]["text"]
    assert "Lima" in peru and "30,814,175" in peru and "Sol" in peru and "PEN" not in peru  # the code is a hop away
    assert "PEN" in pages["currency/PEN"]["text"] and "Peru" in pages["currency/PEN"]["text"]
    countries = [page["text"] for page in pages.values() if page["id"].startswith("country/")]
    for wordings in (
        ("Lying in", " is a country in", " is a sovereign state"),
        ("Its capital is", "The capital city is"),
    ):
        assert all(any(w in text for text in countries) for w in wordings)  # no single sentence template


def test_every_kept_task_hop_chain_is_retrievable_with_the_shipped_search(corpus, result):
    index = CorpusIndex.open(LocalCorpusConfig(path=corpus))
    assert len(result.kept) == 30
    for candidate in result.kept:
        for hop in candidate.provenance["hops"]:
            assert hop["doc"] in [hit.document.id for hit in index.search(hop["query"], 5)], (candidate.task.id, hop)
    index.close()


def test_answers_are_the_corpus_facts_and_checkable_by_the_qa_checker(result):
    world = load_world()
    for candidate in result.kept:
        answers = candidate.task.answers
        last = candidate.provenance["hops"][-1]
        assert exact_match(answers[0], answers) and all(exact_match(alias, answers) for alias in answers)
        if candidate.kind == "depth":
            assert last["value"] == answers[0]
            entity = world[last["entity"]]
            facts = [str(v) for v in entity.attrs.values()] + [f"+{entity.attrs.get('calling_code')}"]
            assert answers[0] in facts or answers[0] == str(len(entity.links.get("subdivisions", [])))
        else:
            values = [sub["value"] for sub in candidate.provenance["seed"]["sub_questions"]]
            op = candidate.provenance["operation"]
            if op == "sum":
                assert answers[0] == str(sum(values))
            elif op == "difference":
                assert answers[0] == str(max(values) - min(values))


def test_depth_and_width_reach_several_lookups_with_varied_wording(result):
    summary = result.summary()
    assert set(summary["hops_kept"]) >= {2, 3, 4} and summary["by_kind"]["width"]["kept"] > 0
    openings = {" ".join(c.task.question.split()[:4]) for c in result.kept}
    assert len(openings) >= 8
    assert all(c.not_run.keys() == {"decontaminated", "closed_book"} for c in result.kept)  # recorded, not passed


def test_seed_questions_get_their_mention_replaced(corpus, tmp_path):
    seeds = tmp_path / "seeds.jsonl"
    rows = [{"question": "Which river flows through the capital of Peru?", "answers": ["Rímac"]},
            {"question": "Who designed the flag of Kenya?", "answers": ["Unknown designer"]}]  # fmt: skip
    seeds.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = expand(ExpandConfig(corpus=str(corpus), seeds=seeds, depth=2, count=2, seed=1))
    seeded = [c for c in out.candidates if c.kind == "seeded"]
    assert len(seeded) == 2 and all("Peru" not in c.task.question and "Kenya" not in c.task.question for c in seeded)
    assert seeded[0].task.answers == ["Rímac"] and seeded[0].provenance["seed"]["mention"] == "Peru"


def test_cli_end_to_end_writes_tasks_report_and_funnel(corpus, tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    argv = [
        "tasks",
        "expand",
        "--corpus",
        str(corpus),
        "--depth",
        "3",
        "--width",
        "2",
        "--count",
        "8",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "expand: " in printed and "8 kept" in printed and "closed_book not run" in printed
    tasks = load_tasks(out)
    assert len(tasks) == 8 and all(t.domain == "qa" and t.extra["provenance"]["hops"] for t in tasks)
    report = [json.loads(line) for line in out.with_name("tasks.report.jsonl").open()]
    assert len(report) >= 8 and all("verdicts" in row for row in report)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--corpus", "missing.jsonl"], "missing.jsonl: corpus file not found"),
        (["--seeds", "SEEDS"], "seed file:"),
        (["--depth", "2", "--min-depth", "3"], "--min-depth 3 is above --depth 2"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--base-url needs --closed-book-model"),
    ],
)
def test_bad_input_is_one_line(corpus, tmp_path, capsys, argv, message):
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("{not json\n")
    argv = [str(seeds) if a == "SEEDS" else a for a in argv]
    corpus_args = [] if "--corpus" in argv else ["--corpus", str(corpus)]
    assert main(["tasks", "expand", *corpus_args, *argv, "--out", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_pipeline_expand_stage_runs_before_generation(corpus, tmp_path):
    from factory.pipeline.stages import Context, all_stages
    from factory.run_config import FactoryConfig

    out = tmp_path / "tasks.jsonl"
    pipeline = {"expand": {"out": str(out), "count": 4, "corpus": str(corpus)}, "generate": ["coa"], "export": None}
    config = FactoryConfig(run_dir=str(tmp_path / "run"), pipeline=pipeline)
    stages = all_stages(config.pipeline)
    assert [stage.name for stage in stages][:2] == ["expand", "coa"]
    lines = stages[0].run(Context(config, False))
    assert "4 kept" in lines[0] and len(load_tasks(out)) == 4 and not stages[0].outputs_missing(Context(config, False))
