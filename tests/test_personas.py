"""Personas: the shipped library, loaders, dedup, sampling, the store and LLM expansion."""

import asyncio
import importlib.util
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from loopback_server import ok

from factory.errors import FactoryError
from factory.llm import LLMClient
from factory.paths import personas_dir
from factory.personas import (
    LIBRARY_SOURCE,
    Persona,
    dedup_personas,
    exact_duplicate_pairs,
    expand_personas,
    jaccard,
    load_library,
    load_personas,
    near_duplicate_pairs,
    sample_personas,
    save_personas,
    shingles,
    stored_personas,
    text_id,
)  # fmt: skip
from factory.store import Store

ROOT = Path(__file__).resolve().parents[1]
LONG = "A retired marine biologist in Lisbon who volunteers at the aquarium and teaches children about octopuses"


def library_rows():
    lines = (personas_dir() / "library.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# -- the shipped library ------------------------------------------------------


def test_library_rows_follow_the_schema_and_load():
    rows = library_rows()
    assert len(rows) >= 1000
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        assert set(row) == {"id", "persona", "source", "tags"}
        assert re.fullmatch(r"p\d{4}", row["id"]) and row["source"] == LIBRARY_SOURCE
        assert 60 <= len(row["persona"]) <= 400
        assert row["tags"]["kind"] in ("real", "story") and row["tags"]["occupation"] and row["tags"]["place"]
        assert all(isinstance(v, str) for v in row["tags"].values())
    personas = load_library()
    assert [(p.id, p.text, p.tags) for p in personas] == [(r["id"], r["persona"], r["tags"]) for r in rows]


def test_library_is_diverse():
    rows = library_rows()
    story = [r for r in rows if r["tags"]["kind"] == "story"]
    real = [r for r in rows if r["tags"]["kind"] == "real"]
    assert 0.15 <= len(story) / len(rows) <= 0.3
    assert len({r["tags"]["occupation"] for r in real}) >= 150
    assert len({r["tags"]["place"] for r in real}) >= 100
    assert len({r["tags"]["age_group"] for r in real}) == 5
    assert len({r["tags"]["genre"] for r in story}) >= 10


def test_library_has_no_exact_or_near_duplicates():
    texts = [r["persona"] for r in library_rows()]
    assert exact_duplicate_pairs(texts) == []
    assert near_duplicate_pairs(texts, 0.8) == []


def test_library_file_is_what_the_builder_makes():
    spec = importlib.util.spec_from_file_location("build_personas", ROOT / "scripts" / "build_personas.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    fresh = builder.to_jsonl(builder.build(personas_dir() / "components"))
    assert fresh == (personas_dir() / "library.jsonl").read_text(encoding="utf-8")


# -- dedup ----------------------------------------------------------------------


def test_near_duplicate_checker_finds_a_one_word_change():
    texts = [LONG, "A street musician in Osaka who plays the shamisen", LONG.replace("octopuses", "squid")]
    assert exact_duplicate_pairs(texts) == []
    [(i, j, score)] = near_duplicate_pairs(texts)  # the default threshold, 0.8, as the library test uses
    assert (i, j) == (0, 2) and 0.8 < score < 0.95
    assert near_duplicate_pairs(texts, 0.95) == []


def test_exact_duplicates_ignore_case_punctuation_and_spacing():
    assert exact_duplicate_pairs(["A baker, in Lyon!", "a  baker in lyon", "A baker in Lille"]) == [(0, 1)]


def test_prefix_filter_misses_no_pair_that_brute_force_finds():
    rng = random.Random(3)
    base = [p.text for p in load_library()[:60]]
    texts = base + [" ".join(w for w in t.split() if rng.random() > 0.12) for t in base[:40]]
    sets = [shingles(t) for t in texts]
    for threshold in (0.3, 0.5, 0.8):
        brute = {(i, j) for j in range(len(sets)) for i in range(j) if jaccard(sets[i], sets[j]) > threshold}
        assert {(i, j) for i, j, _ in near_duplicate_pairs(texts, threshold)} == brute
        assert brute or threshold == 0.8


def test_dedup_personas_keeps_first_and_says_why():
    personas = [
        Persona(id="a", text=LONG, source="t"),
        Persona(id="b", text=LONG.upper(), source="t"),
        Persona(id="c", text=LONG.replace("octopuses", "squid"), source="t"),
        Persona(id="d", text="A night-shift baker in Montreal", source="t"),
    ]
    result = dedup_personas(personas)
    assert [p.id for p in result.kept] == ["a", "d"]
    assert [(d.persona.id, d.duplicate_of) for d in result.dropped] == [("b", "a"), ("c", "a")]
    assert result.dropped[0].reason == "exact duplicate of a" and "near duplicate of a" in result.dropped[1].reason
    seed = Persona(id="s", text="a night shift baker in montreal", source="x")
    against = dedup_personas(personas[3:], against=[seed])
    assert against.kept == [] and against.dropped[0].duplicate_of == "s"


# -- loaders --------------------------------------------------------------------


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_with_and_without_ids_and_blank_rows(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": 7, "persona": " A potter in Kyoto "}, {"persona": ""},
                                               {"persona": None}, {"persona": "A welder in Gdansk"}])  # fmt: skip
    path.write_text(path.read_text() + "\n\n")
    first, second = load_personas(path)
    assert first == Persona(id="7", text="A potter in Kyoto", source="p.jsonl")
    assert second.id == text_id("A welder in Gdansk") and re.fullmatch(r"h[0-9a-f]{12}", second.id)


def test_persona_hub_field_names_work_as_they_are(tmp_path):
    hub = write_jsonl(tmp_path / "persona.jsonl", [{"persona": "A chemistry teacher who loves puzzles"}])
    assert load_personas(hub)[0].text == "A chemistry teacher who loves puzzles"
    rows = [{"input persona": "A sommelier in Bordeaux", "synthesized text": "Plan a tasting menu", "description": "x"}]
    task = write_jsonl(tmp_path / "instruction.jsonl", rows)
    assert load_personas(task)[0].text == "A sommelier in Bordeaux"
    assert load_personas(task, field="synthesized text")[0].text == "Plan a tasting menu"


def test_csv_parquet_and_json_array(tmp_path):
    (tmp_path / "p.csv").write_text('id,persona\nx1,"A tailor, in Accra"\nx2,"A poet\nwho writes in two lines"\n')
    assert [(p.id, p.text) for p in load_personas(tmp_path / "p.csv")] == [
        ("x1", "A tailor, in Accra"),
        ("x2", "A poet\nwho writes in two lines"),
    ]
    pq.write_table(pa.table({"persona": ["A nurse in Oslo", "A pilot in Quito"]}), tmp_path / "p.parquet")
    assert [p.text for p in load_personas(tmp_path / "p.parquet")] == ["A nurse in Oslo", "A pilot in Quito"]
    (tmp_path / "p.json").write_text(json.dumps([{"persona": "A judge in Lima"}]))
    assert load_personas(tmp_path / "p.json", source_name="mine")[0].source == "mine"


def test_datasets_on_disk_and_in_memory(tmp_path):
    datasets = pytest.importorskip("datasets")
    data = datasets.Dataset.from_list([{"persona": "A farrier in Kent"}, {"persona": "A DJ in Lagos"}])
    data.save_to_disk(str(tmp_path / "ds"))
    assert [p.text for p in load_personas(tmp_path / "ds")] == ["A farrier in Kent", "A DJ in Lagos"]
    datasets.DatasetDict({"train": data}).save_to_disk(str(tmp_path / "dd"))
    assert len(load_personas(tmp_path / "dd")) == 2
    with pytest.raises(FactoryError, match="no split 'test'; the splits are: train"):
        load_personas(tmp_path / "dd", split="test")
    assert load_personas(data)[1].text == "A DJ in Lagos"


def one_line_error(call) -> str:
    with pytest.raises(FactoryError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_malformed_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"persona": "A chef"}\n\n{"persona": "A cook"\n')
    assert re.match(rf"{re.escape(str(path))}:3: not valid JSON", one_line_error(lambda: load_personas(path)))


def test_missing_field_names_file_and_columns(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"text": "A chef", "lang": "en"}])
    message = one_line_error(lambda: load_personas(path))
    assert str(path) in message and "'text', 'lang'" in message and "'persona'" in message
    (tmp_path / "p.csv").write_text("name\nA chef\n")
    assert "'name'" in one_line_error(lambda: load_personas(tmp_path / "p.csv", field="bio"))
    later = write_jsonl(tmp_path / "q.jsonl", [{"persona": "A chef"}, {"bio": "A cook"}])
    assert f"{later}:2: no 'persona' field" in one_line_error(lambda: load_personas(later))
    assert "--persona-field on the command line, refine.persona_field in the config" in message  # the user's words


def test_the_persona_column_is_a_flag_of_refine():
    from factory.cli import build_parser
    from factory.run_config import config_from_args

    args = build_parser().parse_args(["refine", "--personas", "p.jsonl", "--persona-field", "bio"])
    assert config_from_args(args).refine.persona_field == "bio"


def test_unreadable_inputs_are_one_line_errors(tmp_path):
    assert "no such file" in one_line_error(lambda: load_personas(tmp_path / "missing.jsonl"))
    (tmp_path / "p.txt").write_text("x")
    assert "unsupported persona file type '.txt'" in one_line_error(lambda: load_personas(tmp_path / "p.txt"))
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    assert "cannot read as parquet" in one_line_error(lambda: load_personas(tmp_path / "bad.parquet"))
    (tmp_path / "empty").mkdir()
    assert "not a dataset folder" in one_line_error(lambda: load_personas(tmp_path / "empty"))
    path = write_jsonl(tmp_path / "n.jsonl", [{"persona": 42}])
    assert f"{path}:1: field 'persona' should be text" in one_line_error(lambda: load_personas(path))


# -- sampling -------------------------------------------------------------------


def test_sampling_is_deterministic_without_replacement():
    personas = load_library()
    first = sample_personas(personas, 50, seed=11)
    assert first == sample_personas(personas, 50, seed=11)
    assert first != sample_personas(personas, 50, seed=12)
    assert len({p.id for p in first}) == 50
    assert sample_personas(personas, 20, seed=11) == first[:20]  # growing n extends the sample
    shuffled = list(personas)
    random.Random(0).shuffle(shuffled)
    assert sample_personas(shuffled, 50, seed=11) == first  # the load order does not matter
    assert sample_personas(personas, 0, seed=1) == []
    assert "only 2 are loaded" in one_line_error(lambda: sample_personas(personas[:2], 3, seed=1))


def test_sampling_is_the_same_in_other_processes():
    code = "from factory.personas import load_library as l, sample_personas as s; print(*[p.id for p in s(l(), 8, 5)])"
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                       env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}).stdout.split()
        for seed in ("1", "2")
    ]  # fmt: skip
    assert runs[0] == runs[1] == [p.id for p in sample_personas(load_library(), 8, 5)]


# -- store and expansion (against the loopback server) ---------------------------


def test_save_personas_is_idempotent(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert store.has_table("personas")
    personas = load_library()[:30] + [Persona(id="h1", text="A child of p0001", source="x", parent_id="p0001")]
    assert save_personas(store, personas + personas[:3]) == 31  # a repeated id in one batch is stored once
    assert save_personas(store, personas) == 0
    assert store.query("SELECT count(*), count(DISTINCT persona_id) FROM personas") == [(31, 31)]
    stored = {p.id: p for p in stored_personas(store)}
    assert stored["h1"].parent_id == "p0001" and stored["p0002"].text == personas[1].text
    assert [p.id for p in stored_personas(store, source="x")] == ["h1"]
    store.close()


SEEDS = [
    Persona(id="s1", text="A baker in Lyon who is opening a second shop near the station", source="t"),
    Persona(id="s2", text="A chess coach in Pune who trains teenagers for national tournaments", source="t"),
    Persona(id="s3", text="A GARBLED-SEED ferry captain in Split who is planning the summer timetable", source="t"),
]
FLOUR = "A flour miller in the Rhone valley who supplies organic flour to bakeries around Lyon"


def expansion_reply(body):
    """Replies keyed on the seed: new personas, a copy of a seed, a copy across seeds, one too many."""
    prompt = " ".join(str(m.get("content")) for m in body["messages"])
    if "baker in Lyon" in prompt:
        items = [
            ("flour supplier", FLOUR),
            ("old friend", SEEDS[1].text),
            ("apprentice", "A 19-year-old pastry apprentice in Lyon who dreams of Paris"),
        ]
    else:
        items = [
            ("rival coach", "A rival chess coach in Mumbai whose students keep beating the Pune club"),
            ("supplier", FLOUR.replace("organic", "Organic!")),
            ("parent", "A parent who drives a student to every chess match"),
            ("fourth", "A fourth persona, left out because only three were asked for"),
        ]
    return json.dumps({"personas": [{"relation": r, "persona": p} for r, p in items]})


def test_expansion_dedups_sets_parents_and_counts_failures(server, fast_config, tmp_path):
    server.content = expansion_reply
    server.route("GARBLED-SEED", ok("this is not JSON"), ok("still not JSON"), ok("nope"))
    store = Store(tmp_path / "s.sqlite")

    async def go():
        async with LLMClient(fast_config(max_parse_retries=1), store) as llm:
            return await expand_personas(llm, SEEDS, per_seed=3, progress=False)

    outcome = asyncio.run(go())
    assert outcome.failures == 1 and outcome.failed == [("s3", "schema")]
    texts = [p.text for p in outcome.personas]
    assert texts == [
        FLOUR,
        "A 19-year-old pastry apprentice in Lyon who dreams of Paris",
        "A rival chess coach in Mumbai whose students keep beating the Pune club",
        "A parent who drives a student to every chess match",
    ]
    assert [p.parent_id for p in outcome.personas] == ["s1", "s1", "s2", "s2"]
    assert outcome.personas[0].tags == {"relation": "flour supplier"} and outcome.personas[0].id == text_id(FLOUR)
    assert sorted(d.duplicate_of for d in outcome.dropped) == [text_id(FLOUR), "s2"]  # copies of a seed and a sibling
    assert save_personas(store, SEEDS + outcome.personas) == 7
    assert save_personas(store, outcome.personas) == 0
    parents = store.query("SELECT parent_id FROM personas WHERE source = 'persona-expand' ORDER BY parent_id")
    assert parents == [("s1",), ("s1",), ("s2",), ("s2",)]
    assert store.query("SELECT DISTINCT stage FROM llm_calls") == [("persona_expand",)]
    prompts = [" ".join(m["content"] for m in r["body"]["messages"]) for r in server.requests]
    assert any("baker in Lyon" in p and "Write 3 personas" in p for p in prompts)
    store.close()


def test_expansion_rejects_a_bad_per_seed(fast_config):
    call = expand_personas(LLMClient(fast_config()), SEEDS, per_seed=0, progress=False)  # fails before any request
    assert "per_seed must be between 1 and" in one_line_error(lambda: asyncio.run(call))
