"""Depth expansion over a user's own corpus: LLM descriptions (scripted loopback replies), real BM25, the CLI.

The corpus is a dozen linked pages written here; the describer's replies are what a strong model
writes for the real prompt, and the broken ones are the ways a reply goes wrong: evidence the page
does not hold, a description that names the entity, a query that does not find the page, garbage.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from loopback_server import ok

from factory.cli import main
from factory.coa.tools.bm25 import CorpusIndex
from factory.coa.tools.config import LocalCorpusConfig
from factory.llm import LLMClient
from factory.synth.expand import ExpandConfig, open_index
from factory.synth.llm_depth import expand_described
from factory.tasks import load_tasks

PAGES = {
    "Charles Bridge": "Charles Bridge is a medieval stone arch bridge that crosses the Vltava in Prague, Czech Republic. "
    "Its construction started in 1357 under the auspices of King Charles IV and was completed in 1402. The bridge "
    "was designed by the architect Peter Parler. It is 516 metres long and nearly 10 metres wide, resting on 16 "
    "arches shielded by ice guards, and is protected by three bridge towers.",
    "Vltava": "The Vltava is the longest river within the Czech Republic, running southeast along the Bohemian "
    "Forest and then north across Bohemia, through Český Krumlov, České Budějovice and Prague, and finally merging "
    "with the Elbe at Mělník. It measures 430 km in length and drains an area of about 28,090 square kilometres.",
    "Prague": "Prague is the capital and largest city of the Czech Republic and the historical capital of Bohemia. "
    "Situated on the Vltava, the city is home to about 1.3 million people. Prague Castle, the seat of the head of "
    "state, overlooks the Lesser Town from its hill on the left bank of the river.",
    "Elbe": "The Elbe is one of the major rivers of Central Europe. It rises in the Krkonoše Mountains of the "
    "northern Czech Republic before traversing much of Bohemia, then Germany, and flowing into the North Sea at "
    "Cuxhaven, 110 km northwest of Hamburg. Its total length is 1,094 kilometres.",
    "Peter Parler": "Peter Parler was a German-Bohemian architect and sculptor from the Parler family of builders. "
    "He designed the choir of St. Vitus Cathedral and the Old Town Bridge Tower, and he died in Prague in 1399.",
    "Charles IV": "Charles IV was Holy Roman Emperor from 1355 until his death in 1378 and King of Bohemia from "
    "1346. A member of the House of Luxembourg, he founded Charles University in Prague in 1348.",
    "Bohemian Forest": "The Bohemian Forest is a low mountain range in Central Europe along the border of the "
    "Czech Republic, Austria and Germany. The sources of the Vltava lie on its slopes.",
    "Hamburg": "Hamburg is the second-largest city in Germany. It stands on the Elbe about 110 km from the North Sea "
    "and has one of the busiest ports in Europe.",
    "North Sea": "The North Sea lies between Great Britain, Scandinavia, Germany, the Netherlands, Belgium and "
    "France. Major rivers such as the Elbe and the Rhine drain into it.",
    "Mělník": "Mělník is a town in the Central Bohemian Region of the Czech Republic, known for the confluence of "
    "the Vltava and the Elbe below its castle and for its vineyards.",
    "Charles University": "Charles University is the oldest university in Central Europe, founded in Prague in "
    "1348. Its historic seat is the Carolinum in the Old Town.",
    "St. Vitus Cathedral": "St. Vitus Cathedral is a Gothic cathedral within the walls of Prague Castle. It holds "
    "the tombs of several Bohemian kings and Holy Roman Emperors.",
}
BRIDGE = ("When was the construction of the Charles Bridge completed?", "1402")
KEPT_QUESTION = (
    "When was the construction of the medieval stone arch bridge that crosses the longest river within the "
    "Czech Republic completed?"
)
SEEDS = [
    BRIDGE,
    ("How long is the Elbe?", "1,094 km"),  # evidence the page does not hold
    ("How many people live in Prague?", "1.3 million"),  # a description that names the city
    ("In which city did Peter Parler die?", "Prague"),  # a query that does not find the page
    ("Which dynasty did Charles IV belong to?", "House of Luxembourg"),  # garbage
    ("Who founded the Bohemian Kingdom?", "Přemyslid dynasty"),  # no page titled as any span
]


def reply(description, evidence, query):
    return ok(json.dumps({"description": description, "evidence": evidence, "query": query}))


def route_bridge(server):
    server.route("Entity to describe: Charles Bridge\n", reply(
        "the medieval stone arch bridge that crosses the Vltava",
        "Charles Bridge is a medieval stone arch bridge that crosses the Vltava in Prague, Czech Republic.",
        "medieval stone arch bridge over the Vltava"))  # fmt: skip
    server.route("Entity to describe: Vltava\n", reply(
        "the longest river within the Czech Republic",
        "The Vltava is the longest river within the Czech Republic, running southeast along the Bohemian Forest and "
        "then north across Bohemia, through Český Krumlov, České Budějovice and Prague, and finally merging with the "
        "Elbe at Mělník.",
        "longest river in the Czech Republic"))  # fmt: skip


def route_broken(server):
    server.route("Entity to describe: Elbe\n", reply(
        "the river that rises in the Krkonoše Mountains and passes Hamburg",
        "The Elbe is the longest river flowing through both Dresden and Hamburg.",
        "river rising in the Krkonoše Mountains"))  # fmt: skip
    server.route("Entity to describe: Prague\n", reply(
        "the city on the Vltava overlooked by Prague Castle",
        "Prague Castle, the seat of the head of state, overlooks the Lesser Town from its hill on the left bank of "
        "the river.",
        "city on the Vltava with a castle"))  # fmt: skip
    server.route("Entity to describe: Peter Parler\n", reply(
        "the architect who designed the Old Town Bridge Tower",
        "He designed the choir of St. Vitus Cathedral and the Old Town Bridge Tower, and he died in Prague in 1399.",
        "Renaissance painter of frescoes in Florence"))  # fmt: skip
    server.route("Entity to describe: Charles IV\n", *[ok("Sure! Charles IV was an emperor of note.")] * 12)


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": f"page/{n}", "title": title, "text": text, "url": f"https://example.org/{n}"}
            for n, (title, text) in enumerate(PAGES.items())]  # fmt: skip
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


def seed_file(path, seeds):
    path.write_text("".join(json.dumps({"question": q, "answers": [a]}) + "\n" for q, a in seeds))
    return path


def run(fast_config, config):
    async def go():
        index = open_index(config.corpus)
        try:
            async with LLMClient(fast_config()) as client:
                return await expand_described(config, client, index)
        finally:
            index.close()

    return asyncio.run(go())


def test_a_two_hop_task_names_neither_entity_and_each_hop_is_retrievable(server, fast_config, corpus, tmp_path):
    route_bridge(server)
    seeds = seed_file(tmp_path / "seeds.jsonl", [BRIDGE])
    (candidate,) = run(fast_config, ExpandConfig(corpus=str(corpus), seeds=seeds, depth=3, count=5)).candidates

    assert candidate.kept, candidate.verdicts
    task = candidate.task
    assert task.question == KEPT_QUESTION and task.answers == ["1402"]
    assert "Charles" not in task.question and "Vltava" not in task.question
    assert (candidate.kind, candidate.hops, task.source) == ("llm_depth", 3, "synth:llm_depth")
    hops = candidate.provenance["hops"]
    assert [hop["entity"] for hop in hops] == ["Vltava", "Charles Bridge", "Charles Bridge"]  # solver's order
    assert [hop["doc"] for hop in hops] == ["page/1", "page/0", None] and hops[-1]["relation"] == "seed question"
    assert hops[1]["mention"] == "Charles Bridge" and hops[0]["mention"] == "Vltava"
    assert candidate.provenance["documents"] == ["page/1", "page/0"]
    assert (
        candidate.provenance["seed"]["mention"] == "Charles Bridge" and task.extra["provenance"] == candidate.provenance
    )
    index = CorpusIndex.open(LocalCorpusConfig(path=corpus))
    for hop in hops[:2]:
        assert hop["evidence"] in " ".join(PAGES[hop["entity"]].split())
        assert hop["doc"] in [hit.document.id for hit in index.search(hop["query"], 5)]
    index.close()
    assert list(candidate.verdicts) == ["entity_page", "written", "evidence_on_page", "name_hidden", "retrievable",
                                        "answer_not_in_question", "dedup"]  # fmt: skip
    assert "on page page/0; on page page/1" == candidate.verdicts["evidence_on_page"][1]
    assert candidate.not_run.keys() == {"decontaminated"}


def test_each_gate_drops_what_it_should_with_its_reason(server, fast_config, corpus, tmp_path):
    route_bridge(server)
    route_broken(server)
    seeds = seed_file(tmp_path / "seeds.jsonl", SEEDS)
    result = run(fast_config, ExpandConfig(corpus=str(corpus), seeds=seeds, depth=3, count=10))
    by_seed = {c.provenance["seed"]["question"]: c for c in result.candidates}
    expected = {
        SEEDS[1][0]: ("evidence_on_page", "evidence not on the page: page/3 does not hold 'The Elbe is the longest"),
        SEEDS[2][0]: ("name_hidden", "name in the description: 'prague' names 'Prague'"),
        SEEDS[3][0]: ("retrievable", "page not found: page/4 not in the top 5 for 'Renaissance painter"),
        SEEDS[4][0]: ("written", ""),
        SEEDS[5][0]: ("entity_page", "no page title matches a span: 'Bohemian Kingdom' -> 'Bohemian Forest'"),
    }
    for question, (gate, reason) in expected.items():
        candidate = by_seed[question]
        assert candidate.dropped_by == gate, (question, candidate.verdicts)
        assert candidate.verdicts[gate][1].startswith(reason), candidate.verdicts[gate]
        assert candidate.task.answers == [a for q, a in SEEDS if q == question]
    assert by_seed[BRIDGE[0]].kept and len(result.kept) == 1
    summary = result.summary()
    assert summary["dropped"] == {"written": 1, "retrievable": 1, "entity_page": 1, "evidence_on_page": 1,
                                  "name_hidden": 1}  # fmt: skip
    assert summary["dropped_by_reason"]["name_hidden"] == {"name in the description": 1}
    assert by_seed[SEEDS[3][0]].provenance["hops"][0]["query"] == "Renaissance painter of frescoes in Florence"


def test_cli_end_to_end_and_a_rerun_asks_nothing(server, corpus, tmp_path, capsys):
    route_bridge(server)
    seeds = seed_file(tmp_path / "seeds.jsonl", [BRIDGE, SEEDS[5]])
    out = tmp_path / "tasks.jsonl"
    argv = ["tasks", "expand", "--corpus", str(corpus), "--seeds", str(seeds), "--depth", "3", "--model", "loopback",
            "--base-url", server.base_url, str(tmp_path / "run"), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "expand: 2 made -> entity_page -1 -> 1 kept" in printed and "closed_book not run" in printed
    (task,) = load_tasks(out)
    assert task.question == KEPT_QUESTION and task.answers == ["1402"] and task.domain == "qa"
    report = [json.loads(line) for line in out.with_name("tasks.report.jsonl").open()]
    assert [row["kept"] for row in report] == [True, False] and report[1]["dropped_by"] == "entity_page"
    sent = len(server.requests)
    assert sent == 2
    assert main(argv) == 0 and len(server.requests) == sent  # every describer call came from the run's store
    assert load_tasks(out)[0].question == KEPT_QUESTION


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--corpus", "missing.jsonl", "--seeds", "SEEDS"], "missing.jsonl: corpus file not found"),
        (["--corpus", "CORPUS", "--seeds", "nowhere.jsonl"], "nowhere.jsonl: no such file"),
        (["--corpus", "CORPUS"], "needs --seeds"),
        (["--corpus", "geo", "--seeds", "SEEDS"], "--corpus geo uses its facts"),
    ],
)
def test_bad_input_is_one_line(corpus, tmp_path, capsys, argv, message):
    seeds = seed_file(tmp_path / "seeds.jsonl", [BRIDGE])
    argv = [{"SEEDS": str(seeds), "CORPUS": str(corpus)}.get(a, a) for a in argv]
    run_dir = str(tmp_path / "run")
    model = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]  # a model name that resolves (issue 28)
    assert main(["tasks", "expand", *argv, *model, run_dir, "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
