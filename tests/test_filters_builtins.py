"""Each built-in filter kind on a real DuckDB store (no fakes: SQL runs for real)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from filter_rows import T0, add_coa, coa_stats, kept, seed_run, verdicts, write_config

from factory.filters import run_filters
from factory.store import Store


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return seed_run(tmp_path)


def test_complexity_counts_tool_calls_on_coa_and_actions_on_refine(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 5}]"))
    v = verdicts(run_dir, "c")
    assert kept(run_dir, "c") == {"coa:q1", "coa:q3", "import:x1", "refine:p2"}
    assert v["coa:q2"][1] == "too few tool calls: 3 < 5"
    assert v["refine:p1"][1] == "too few tool calls: 4 < 5"  # 4 assistant turns = 4 actions
    assert v["refine:p3"][1] == "too few tool calls: 0 < 5"  # unparseable stats: judged on nothing, not a crash
    run_filters(
        run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: null, min_turns: 12}]")
    )
    assert kept(run_dir, "c") == {"coa:q1", "coa:q3", "import:x1", "refine:p2"}
    assert verdicts(run_dir, "c")["refine:p1"][1] == "too few turns: 9 < 12"


def test_reflection_uses_reflections_or_replans_for_coa_and_corrections_for_refine(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: r, kind: reflection}]"))
    assert kept(run_dir, "r") == {"coa:q1", "coa:q3", "import:x1", "refine:p1"}  # q3 has a replan only
    assert verdicts(run_dir, "r")["refine:p2"][1] == "too few corrections: 0 < 1"
    run_filters(
        run_dir,
        write_config(
            tmp_path,
            "filters: [{name: r, kind: reflection, count_replans: false, min_reflections: 2, min_corrections: 3}]",
        ),
    )
    assert kept(run_dir, "r") == {"import:x1"}
    assert verdicts(run_dir, "r")["coa:q1"][1] == "too few reflections: 1 reflections < 2"


def test_correctness_choices_and_unknown(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: ok, kind: correctness}]"))
    v = verdicts(run_dir, "ok")
    assert kept(run_dir, "ok") == {"coa:q1", "coa:q3", "import:x1", "refine:p1", "refine:p2"}
    assert v["coa:q2"][1] == "incorrect: em=0 'lyon'"
    assert v["coa:q4"][1] == "not verified: unclosed_tag"
    assert v["coa:q3"][1] == "correctness unknown: correct is NULL"  # kept, with the note
    run_filters(
        run_dir,
        write_config(tmp_path, "filters: [{name: ok, kind: correctness, require: [correct], unknown_passes: false}]"),
    )
    assert kept(run_dir, "ok") == {"coa:q1", "import:x1"}
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: ok, kind: correctness, require: [verified]}]"))
    assert kept(run_dir, "ok") == {"coa:q1", "coa:q2", "coa:q3", "import:x1", "refine:p1", "refine:p2"}


def test_redundancy_exact_and_near_inputs_drop_or_flag(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: red, kind: redundancy, similarity: 0.8}]"))
    v = verdicts(run_dir, "red")
    assert v["coa:q3"][:2] == (False, "repeated tool input: 'Danube river' x2")  # same after normalising
    assert v["refine:p2"][:2] == (False, "repeated tool input: 'go(garden)' x2")
    assert v["import:x1"][0] is False
    assert v["import:x1"][1].startswith("near-duplicate tool inputs: 'total = sum(primes(100)) print(total)' ~ ")
    assert v["import:x1"][1].endswith("(0.83)")
    assert kept(run_dir, "red") == {"coa:q1", "coa:q2", "coa:q4", "refine:p1", "refine:p3"}
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: red, kind: redundancy, action: flag}]"))
    v = verdicts(run_dir, "red")
    assert all(keep for keep, *_ in v.values())
    assert v["coa:q3"][1] == "repeated tool input: 'Danube river' x2"
    assert v["import:x1"][1] is None  # 0.83 < the default 0.9


def test_dedup_keeps_the_first_and_names_it(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: d, kind: dedup, threshold: 0.7}]"))
    v = verdicts(run_dir, "d")
    assert v["coa:q2"][:2] == (False, "duplicate of coa:q1")  # same text once normalised
    assert v["coa:q4"][:2] == (False, "near-duplicate of coa:q3 (jaccard 0.79)")  # one word added
    assert kept(run_dir, "d") == set(v) - {"coa:q2", "coa:q4"}
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: d, kind: dedup, near: false}]"))
    assert verdicts(run_dir, "d")["coa:q4"][0] is True
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: d, kind: dedup, threshold: 0.8}]"))
    assert verdicts(run_dir, "d")["coa:q4"][0] is True  # 0.79 is under this threshold


def test_dedup_where_limits_the_candidates(run_dir, tmp_path):
    with Store.open(run_dir) as store:  # the verified copy of a failed first row survives when failures are left out
        add_coa(
            store,
            "coa:q5",
            "Which river flows through the city of Vienna and then into the Black Sea",
            9,
            stats=coa_stats(6),
        )
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: d, kind: dedup, near: false, where: verified}]"))
    v = verdicts(run_dir, "d")
    assert v["coa:q5"][0] is True and v["coa:q4"][:2] == (True, None)


def test_dedup_falls_back_to_the_first_turn(tmp_path):
    """Rows with neither a trace question nor a script task are compared on their first turn."""
    first_turn = json.dumps([{"role": "user", "content": "Sort these numbers: 3 1 2", "loss": False}])
    with Store.open(tmp_path) as store:
        for n in range(3):
            store.upsert(
                "trajectories",
                {
                    "trajectory_id": f"import:z{n}",
                    "source": "import",
                    "verified": True,
                    "turns": first_turn if n < 2 else None,
                    "prompt": "Other prompt",
                    "created_at": T0 + timedelta(minutes=n),
                },
            )
    run_filters(tmp_path, write_config(tmp_path, "filters: [{name: d, kind: dedup}]"))
    v = verdicts(tmp_path, "d")
    assert v["import:z1"][:2] == (False, "duplicate of import:z0")
    assert v["import:z0"][0] is True and v["import:z2"][0] is True  # the prompt, when there are no turns


def test_upsample_and_split(run_dir, tmp_path):
    run_filters(
        run_dir,
        write_config(
            tmp_path,
            "filters: [{name: up, kind: upsample, weight: 3}, {name: sp, kind: split, splits: {sft: 0.5, rl: 0.5}}]",
        ),
    )
    up = verdicts(run_dir, "up")
    assert up["coa:q1"] == (True, "upsampled: recovered from a low double-check score", 3.0, None)
    assert up["refine:p1"] == (True, "upsampled: recovered from 2 mistake(s)", 3.0, None)
    assert all(w == 1.0 for tid, (_, _, w, _) in up.items() if tid not in ("coa:q1", "refine:p1"))
    splits = {tid: split for tid, (_, _, _, split) in verdicts(run_dir, "sp").items()}
    assert set(splits.values()) == {"sft", "rl"}
    with Store.open(run_dir, read_only=True) as store:
        curation = dict(store.query("SELECT trajectory_id, struct_pack(weight, split) FROM curation"))
    assert curation["coa:q1"] == {"weight": 3.0, "split": splits["coa:q1"]}


def test_split_puts_every_row_of_a_task_in_one_split(tmp_path):
    with Store.open(tmp_path) as store:
        for i in range(30):
            add_coa(store, f"coa:r{i}", f"question number {i // 3}", i, task_id=f"task{i // 3}", stats=coa_stats(5))
    run_filters(
        tmp_path,
        write_config(tmp_path, "filters: [{name: sp, kind: split, splits: {train: 0.8, validation: 0.1, test: 0.1}}]"),
    )
    with Store.open(tmp_path, read_only=True) as store:
        per_task = store.query(
            "SELECT t.task_id, count(DISTINCT v.split) FROM filter_verdicts v "
            "JOIN trajectories t USING (trajectory_id) GROUP BY 1"
        )
        sizes = dict(store.query("SELECT split, count(*) FROM filter_verdicts GROUP BY 1"))
    assert len(per_task) == 10 and all(n == 1 for _, n in per_task)
    assert sizes["train"] > sizes.get("validation", 0) and set(sizes) <= {"train", "validation", "test"}


def test_a_single_split_names_every_row(tmp_path):
    """`splits: {rl: 1.0}` (all to RL, where a `where` scopes the filter) is valid SQL too."""
    with Store.open(tmp_path) as store:
        for i in range(3):
            add_coa(store, f"coa:s{i}", f"question {i}", i, task_id=f"task{i}", stats=coa_stats(5))
    run_filters(tmp_path, write_config(tmp_path, "filters: [{name: sp, kind: split, splits: {rl: 1.0}}]"))
    assert {split for _, _, _, split in verdicts(tmp_path, "sp").values()} == {"rl"}


def test_split_point_matches_the_plain_md5_modulo(tmp_path):
    """md5_mod splits the 128-bit md5 into 64-bit halves for speed; it must give the same number."""
    from factory.filters.rules import md5_mod

    keys = ["", "task-1", "p42", "script:p7", "ünïcödé ключ", "x" * 500, "salt" + "task-999999"]
    with Store.open(tmp_path) as store:
        rows = store.query(
            f"SELECT k, md5_number(k) % 1000000, {md5_mod('k', 1_000_000)}, md5_number(k) % 7, "
            f"{md5_mod('k', 7)} FROM unnest(?::VARCHAR[]) u(k)",
            [keys],
        )
    assert len(rows) == len(keys)
    for key, plain, split, plain7, split7 in rows:
        assert (split, split7) == (plain, plain7), key


def test_normalised_fast_path_matches_the_full_normalisation(tmp_path):
    """Already-normal text skips the Unicode replace; every other text must still go through it."""
    from factory.filters.sql import normalised

    full = r"trim(regexp_replace(lower(x), '[^\p{L}\p{N}]+', ' ', 'g'))"
    texts = ["what is x", "What is X?", "what  is x", " what is x", "what is x ", "danube  RIVER!", "a\nb", "",
             "ümlaut straße", "tab\there", "go(garden)", "x_y", "3 4 5", "--", None]  # fmt: skip
    with Store.open(tmp_path) as store:
        rows = store.query(f"SELECT x, {normalised('x')}, {full} FROM unnest(?::VARCHAR[]) u(x)", [texts])
    assert len(rows) == len(texts)
    for text, fast, slow in rows:
        assert fast == slow, text


def test_redundancy_keeps_a_refine_row_whose_turns_are_not_json(run_dir, tmp_path):
    with Store(run_dir / "factory.sqlite") as store:
        store.execute(
            'UPDATE trajectories SET turns = \'[{"role": "assistant", "content": \' WHERE trajectory_id = \'refine:p1\''
        )
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: red, kind: redundancy}]"))
    v = verdicts(run_dir, "red")
    assert v["refine:p1"] == (True, None, 1.0, None)
    assert v["refine:p2"][:2] == (False, "repeated tool input: 'go(garden)' x2")
