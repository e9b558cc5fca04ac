"""redundancy against a brute-force reference: every pair of every trajectory, compared in Python.

The SQL screens rows with cheap list tests before any pairwise work; this test
is what says the screen never lets a repeat or near-duplicate through, at low
and high thresholds, for short inputs and for long ones (which the screen
cannot judge by their first word alone).
"""

from __future__ import annotations

import random
import re
import shutil
from itertools import combinations
from pathlib import Path

import pytest
from filter_rows import add_coa, afm, coa_stats, seed_run, verdicts, write_config

from factory.filters import run_filters
from factory.store import Store

WORDS = [f"w{i}" for i in range(40)]


def normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def brute_force_redundant(inputs: list[str], similarity: float) -> bool:
    norms = [n for n in map(normal, inputs) if n]
    if len(set(norms)) < len(norms):
        return True
    sets = [set(n.split()) for n in norms]
    return any(len(a & b) / len(a | b) >= similarity for a, b in combinations(sets, 2))


def random_inputs(rng: random.Random) -> list[str]:
    """2-6 inputs: some short, some long (up to 30 words), some edited copies of an earlier one."""
    inputs: list[str] = []
    for _ in range(rng.randint(2, 6)):
        if inputs and rng.random() < 0.4:
            words = inputs[rng.randrange(len(inputs))].split()
            edit = rng.choice(["swap", "drop", "add", "case"])
            if edit == "swap":
                rng.shuffle(words)
            elif edit == "drop" and len(words) > 1:
                words.pop(rng.randrange(len(words)))
            elif edit == "add":
                words.insert(rng.randrange(len(words) + 1), rng.choice(WORDS))
            else:
                words = [w.upper() + "," for w in words]
            inputs.append(" ".join(words))
        else:
            size = rng.choice([1, 2, 3, 5, 9, 12, 20, 30])
            inputs.append(" ".join(rng.choice(WORDS) for _ in range(size)))
    return inputs


# Rows written with their tool inputs are read as stored; rows written before migration 0009 (NULL) are
# parsed from their text. Each must give the reference's answer, alone or mixed in one store.
STORED = {"stored": "false", "parsed": "true", "mixed": "unicode(substr(trajectory_id, -1)) % 2 = 0"}


@pytest.fixture(scope="module")
def drawn_store(tmp_path_factory: pytest.TempPathFactory):
    """The store of 300 drawn rows for a similarity, written once and copied by each case that reads it:
    writing the rows is most of a case's time, and the three `inputs_from` cases draw the same rows."""
    written: dict[float, tuple[Path, dict[str, list[str]]]] = {}

    def draw(similarity: float) -> tuple[Path, dict[str, list[str]]]:
        if similarity not in written:
            rng, folder = random.Random(int(similarity * 100)), tmp_path_factory.mktemp("drawn")
            rows = {f"coa:r{i}": random_inputs(rng) for i in range(300)}
            with Store.open(folder) as store, store.transaction():  # one commit, not 600
                for minute, (tid, inputs) in enumerate(rows.items()):
                    completion = afm(*[(rng.choice(["web_search", "crawl_page", "code"]), text) for text in inputs])
                    add_coa(
                        store, tid, f"question {minute}", minute, completion=completion, stats=coa_stats(len(inputs))
                    )
            written[similarity] = folder, rows
        return written[similarity]

    return draw


@pytest.mark.parametrize("inputs_from", STORED)
@pytest.mark.parametrize("similarity", [0.5, 0.75, 0.9, 1.0])
def test_sql_redundancy_matches_the_brute_force_reference(
    tmp_path: Path, drawn_store, similarity: float, inputs_from: str
):
    folder, rows = drawn_store(similarity)
    shutil.copytree(folder, tmp_path, dirs_exist_ok=True)
    with Store.open(tmp_path) as store:
        store.execute(f"UPDATE trajectories SET tool_inputs = NULL WHERE {STORED[inputs_from]}")
    run_filters(
        tmp_path, write_config(tmp_path, f"filters: [{{name: red, kind: redundancy, similarity: {similarity}}}]")
    )
    got = {tid for tid, (keep, *_rest) in verdicts(tmp_path, "red").items() if not keep}
    expected = {tid for tid, inputs in rows.items() if brute_force_redundant(inputs, similarity)}
    assert got == expected
    assert 0 < len(expected) < len(rows)  # the draw has both kinds, or the test would prove nothing


def test_rows_are_written_with_their_tool_inputs(tmp_path: Path):
    seed_run(tmp_path)
    with Store.open(tmp_path, read_only=True) as store:
        stored = dict(store.query("SELECT trajectory_id, tool_inputs FROM trajectories"))
    assert stored["coa:q3"] == ["Danube river", "danube  RIVER!", "vienna", "black sea", "u2"]  # by tag, then order
    assert stored["refine:p2"] == ["go(garden)", "open(shed)", "go(garden)", "look()", "take(key)", "leave()"]
    assert stored["coa:q4"] == [] and stored["refine:p3"] == []  # failures: no text, nothing to parse


def test_stored_tool_tags_are_the_afm_grammar_tags_and_the_declared_tools():
    from factory.coa.afm import blocks
    from factory.coa.tools import specs, tool_tags
    from factory.store import derived

    assert tool_tags() == tuple(spec.name for spec in specs()) == ("web_search", "crawl_page", "code")
    assert [tag for tag in blocks.TAGS if tag in tool_tags()] == list(tool_tags())  # the grammar's tags
    assert f"FOR tag IN {list(tool_tags())!r}" in derived.tool_inputs_sql(tool_tags())  # the stored inputs'


def test_a_tie_names_the_earliest_repeat(tmp_path: Path):
    with Store.open(tmp_path) as store:
        for minute in range(20):  # DuckDB's parallel aggregate picks among equals at random without an order
            inputs = [f"beta {minute}", f"alpha {minute}", f"beta {minute}", f"alpha {minute}"]
            add_coa(
                store,
                f"coa:t{minute}",
                f"question {minute}",
                minute,
                completion=afm(*[("web_search", text) for text in inputs]),
                stats=coa_stats(4),
            )
    run_filters(tmp_path, write_config(tmp_path, "filters: [{name: red, kind: redundancy}]"))
    reasons = {tid: reason for tid, (_keep, reason, *_rest) in verdicts(tmp_path, "red").items()}
    assert reasons == {f"coa:t{m}": f"repeated tool input: 'beta {m}' x2" for m in range(20)}
