"""Filters on a real DuckDB store with hand-made trajectories of both paths (no fakes: SQL runs for real)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from loopback_server import ok

from factory.errors import ConfigError, FactoryError
from factory.filters import format_funnel, run_filters
from factory.filters.command import add_filter_parser
from factory.store import Store, utcnow

T0 = datetime(2025, 1, 1, 12, 0, 0)


def afm(*tools: tuple[str, str]) -> str:
    """An AFM completion with one think + tool + observation per (tag, input)."""
    parts = ["<plan>look it up</plan>"]
    for tag, text in tools:
        parts += ["<think>next</think>", f"<{tag}>{text}</{tag}>", "<observation>result</observation>"]
    return "\n".join(parts + ["<think>done</think>", "<answer>x</answer>"])


def refine_turns(*actions: str) -> str:
    turns = [{"role": "user", "content": "You are in a house.", "loss": False, "kind": "observation", "error": None}]
    for action in actions:
        turns.append({"role": "assistant", "content": f"Thought: try\nAction: {action}", "loss": True,
                      "kind": "thought_action", "error": None})
        turns.append({"role": "user", "content": "Observation: ok", "loss": False, "kind": "observation",
                      "error": None})
    return json.dumps(turns)


def coa_stats(tool_calls: int, reflections: int = 0, replans: int = 0, low_corrected: bool = False) -> str:
    return json.dumps({"tool_calls": tool_calls, "reflections": reflections, "replans": replans,
                       "low_double_check_corrected": low_corrected, "double_check_scores": [2, 4]})


def add_coa(store: Store, tid: str, question: str, minutes: int, *, source: str = "coa", domain: str = "qa",
            **row) -> None:
    trace_id = tid
    task_id = row.pop("task_id", "task-" + tid.split(":")[1])
    store.upsert("coa_traces", {"trace_id": trace_id, "task_id": task_id, "source": "mas" if source == "coa" else
                                "import:openai", "variant": "mas", "domain": domain, "question": question,
                                "status": "answered", "created_at": T0})
    values = {"trajectory_id": tid, "source": source, "trace_id": trace_id, "task_id": task_id, "variant": "mas",
              "verified": True, "created_at": T0 + timedelta(minutes=minutes)}
    values.update(row)
    store.upsert("trajectories", values)


def add_refine(store: Store, persona: str, task: str, minutes: int, **row) -> None:
    script_id = f"script:{persona}"
    store.upsert("scripts", {"script_id": script_id, "persona_id": persona, "attempt": 0,
                             "script": json.dumps({"task": task, "actions": []}), "verified": True})
    values = {"trajectory_id": f"refine:{persona}", "source": "refine", "persona_id": persona,
              "script_id": script_id, "verified": True, "created_at": T0 + timedelta(minutes=minutes)}
    values.update(row)
    store.upsert("trajectories", values)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    with Store.open(tmp_path) as store:
        add_coa(store, "coa:q1", "What is the capital of France?", 1, correct=True,
                stats=coa_stats(6, reflections=1, low_corrected=True), n_turns=14, n_corrections=0,
                completion=afm(*[("web_search", f"france fact {i}") for i in range(6)]))
        add_coa(store, "coa:q2", "what is the capital of  FRANCE", 2, correct=False, check_detail="em=0 'lyon'",
                stats=coa_stats(3), n_turns=8, completion=afm(("web_search", "france"), ("crawl_page", "u1"),
                                                              ("web_search", "capital")))
        add_coa(store, "coa:q3", "Which river flows through the city of Vienna and into the Black Sea", 3,
                correct=None, stats=coa_stats(5, replans=1), n_turns=12,
                completion=afm(("web_search", "Danube river"), ("web_search", "danube  RIVER!"),
                               ("web_search", "vienna"), ("web_search", "black sea"), ("crawl_page", "u2")))
        add_coa(store, "coa:q4", "Which river flows through the city of Vienna and then into the Black Sea", 4,
                verified=False, rule="unclosed_tag", reason="grammar unclosed_tag: <think> never closed",
                stats=coa_stats(2))
        add_coa(store, "import:x1", "Compute the sum of the first 100 primes", 5, source="import", correct=True,
                stats=coa_stats(8, reflections=2), n_turns=18, completion=afm(
                    ("code", "total = sum(primes(100))\nprint(total)"),
                    ("code", "total = sum(primes(100))\nprint(total, 1)"),
                    *[("code", f"step_{i}()") for i in range(6)]))
        add_refine(store, "p1", "Bake a cake for the village fair", 6, n_turns=9, n_corrections=2,
                   stats=json.dumps({"turns": 9, "assistant_turns": 4, "corrections": 2}),
                   turns=refine_turns("go(kitchen)", "take(flour)", "mix(flour)", "bake(cake)"))
        add_refine(store, "p2", "Find the lost key in the garden shed", 7, n_turns=13, n_corrections=0,
                   stats=json.dumps({"turns": 13, "assistant_turns": 6, "corrections": 0}),
                   turns=refine_turns("go(garden)", "open(shed)", "go(garden)", "look()", "take(key)", "leave()"))
        add_refine(store, "p3", "Repair the broken fence before the storm", 8, verified=False,
                   reason="budget: verifier kept failing", stats="not json")
    return tmp_path


def write_config(tmp_path: Path, text: str, name: str = "filters.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def verdicts(run_dir: Path, name: str) -> dict[str, tuple]:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query("SELECT trajectory_id, keep, reason, weight, split FROM filter_verdicts WHERE filter = ?",
                           [name])
    return {row[0]: row[1:] for row in rows}


ALL_BUILTINS = """
filters:
  - {name: complex, kind: complexity, min_tool_calls: 5}
  - {name: reflective, kind: reflection}
  - {name: correct, kind: correctness}
  - {name: no_repeats, kind: redundancy, similarity: 0.8}
  - {name: unique, kind: dedup, threshold: 0.7}
  - {name: upsample, kind: upsample, weight: 3}
  - {name: split, kind: split, splits: {sft: 0.5, rl: 0.5}}
  - {name: long_enough, sql: "n_turns >= 9", reason: "fewer than 9 turns"}
"""


def kept(run_dir: Path, name: str) -> set[str]:
    return {tid for tid, (keep, *_rest) in verdicts(run_dir, name).items() if keep}


def test_complexity_counts_tool_calls_on_coa_and_actions_on_refine(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 5}]"))
    v = verdicts(run_dir, "c")
    assert kept(run_dir, "c") == {"coa:q1", "coa:q3", "import:x1", "refine:p2"}
    assert v["coa:q2"][1] == "too few tool calls: 3 < 5"
    assert v["refine:p1"][1] == "too few tool calls: 4 < 5"  # 4 assistant turns = 4 actions
    assert v["refine:p3"][1] == "too few tool calls: 0 < 5"  # unparseable stats: judged on nothing, not a crash
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: null, "
                                                "min_turns: 12}]"))
    assert kept(run_dir, "c") == {"coa:q1", "coa:q3", "import:x1", "refine:p2"}
    assert verdicts(run_dir, "c")["refine:p1"][1] == "too few turns: 9 < 12"


def test_reflection_uses_reflections_or_replans_for_coa_and_corrections_for_refine(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: r, kind: reflection}]"))
    assert kept(run_dir, "r") == {"coa:q1", "coa:q3", "import:x1", "refine:p1"}  # q3 has a replan only
    assert verdicts(run_dir, "r")["refine:p2"][1] == "too few corrections: 0 < 1"
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: r, kind: reflection, count_replans: false, "
                                                "min_reflections: 2, min_corrections: 3}]"))
    assert kept(run_dir, "r") == {"import:x1"}
    assert verdicts(run_dir, "r")["coa:q1"][1] == "too few reflections: 1 reflections < 2"


def test_correctness_choices_and_unknown(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: ok, kind: correctness}]"))
    v = verdicts(run_dir, "ok")
    assert kept(run_dir, "ok") == {"coa:q1", "coa:q3", "import:x1", "refine:p1", "refine:p2"}
    assert v["coa:q2"][1] == "incorrect: em=0 'lyon'"
    assert v["coa:q4"][1] == "not verified: unclosed_tag"
    assert v["coa:q3"][1] == "correctness unknown: correct is NULL"  # kept, with the note
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: ok, kind: correctness, require: [correct], "
                                                "unknown_passes: false}]"))
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
        add_coa(store, "coa:q5", "Which river flows through the city of Vienna and then into the Black Sea", 9,
                stats=coa_stats(6))
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: d, kind: dedup, near: false, where: verified}]"))
    v = verdicts(run_dir, "d")
    assert v["coa:q5"][0] is True and v["coa:q4"][:2] == (True, None)


def test_dedup_falls_back_to_the_first_turn(tmp_path):
    """Rows with neither a trace question nor a script task are compared on their first turn."""
    first_turn = json.dumps([{"role": "user", "content": "Sort these numbers: 3 1 2", "loss": False}])
    with Store.open(tmp_path) as store:
        for n in range(3):
            store.upsert("trajectories", {"trajectory_id": f"import:z{n}", "source": "import", "verified": True,
                                          "turns": first_turn if n < 2 else None, "prompt": "Other prompt",
                                          "created_at": T0 + timedelta(minutes=n)})
    run_filters(tmp_path, write_config(tmp_path, "filters: [{name: d, kind: dedup}]"))
    v = verdicts(tmp_path, "d")
    assert v["import:z1"][:2] == (False, "duplicate of import:z0")
    assert v["import:z0"][0] is True and v["import:z2"][0] is True  # the prompt, when there are no turns


def test_upsample_and_split(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: up, kind: upsample, weight: 3}, "
                                                "{name: sp, kind: split, splits: {sft: 0.5, rl: 0.5}}]"))
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
    run_filters(tmp_path, write_config(tmp_path, "filters: [{name: sp, kind: split, "
                                                 "splits: {train: 0.8, validation: 0.1, test: 0.1}}]"))
    with Store.open(tmp_path, read_only=True) as store:
        per_task = store.query("SELECT t.task_id, count(DISTINCT v.split) FROM filter_verdicts v "
                               "JOIN trajectories t USING (trajectory_id) GROUP BY 1")
        sizes = dict(store.query("SELECT split, count(*) FROM filter_verdicts GROUP BY 1"))
    assert len(per_task) == 10 and all(n == 1 for _, n in per_task)
    assert sizes["train"] > sizes.get("validation", 0) and set(sizes) <= {"train", "validation", "test"}


def add_rollouts(store: Store, task_id: str, model: str, outcomes: list[bool | None], start: int = 0) -> None:
    store.insert_rows("rollouts", {
        "task_id": [task_id] * len(outcomes), "model": [model] * len(outcomes),
        "sample_index": list(range(start, start + len(outcomes))), "completion": ["..."] * len(outcomes),
        "correct": outcomes, "score": [None if ok is None else float(ok) for ok in outcomes],
        "created_at": [datetime.now()] * len(outcomes),
    })


def test_pass_rate_keeps_hard_queries_and_reports_uniform_groups(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        add_rollouts(store, "task-q1", "policy", [True] * 2 + [False] * 6)  # 0.25: kept
        add_rollouts(store, "task-q2", "policy", [False] * 8)  # all wrong: kept, flagged uniform
        add_rollouts(store, "task-q3", "policy", [True] * 4 + [False] * 4 + [None] * 8)  # 0.5 of 8 judged
        add_rollouts(store, "task-q4", "policy", [False] * 3)  # too few
        add_rollouts(store, "task-q1", "other", [True] * 8)  # another model's rollouts do not count
        add_coa(store, "coa:c1", "Write a function that reverses a list", 10, task_id="task-c1", domain="code",
                stats=coa_stats(5))
        add_rollouts(store, "task-c1", "policy", [True] * 8)
    config = write_config(tmp_path, "filters: [{name: pr, kind: pass_rate, model: policy, sources: [coa, import]}]")
    report = run_filters(run_dir, config)
    v = verdicts(run_dir, "pr")
    assert v["coa:q1"][:2] == (True, "pass rate: 0.25 (2/8)")
    assert v["coa:q2"][:2] == (True, "uniform group: all 8 rollouts wrong")
    assert v["coa:q3"][:2] == (False, "pass rate too high: 0.5 > 0.3 (4/8)")  # failed requests do not count
    assert v["coa:q4"][:2] == (False, "too few rollouts: 3 < 8 for model policy")
    assert v["coa:c1"][:2] == (False, "all rollouts correct: 8 of 8 (code)")
    assert v["import:x1"][1] == "too few rollouts: 0 < 8 for model policy"
    assert v["refine:p1"][:2] == (True, None)  # outside `sources`
    assert report.filters[0].notes["uniform group"] == 1
    # New rollouts arrive: the filter judges every row again, though its config is unchanged.
    with Store.open(run_dir) as store:
        add_rollouts(store, "task-q4", "policy", [None] * 3 + [True] + [False] * 4, start=3)
    again = run_filters(run_dir, config)
    assert again.filters[0].mode == "new rollouts" and again.filters[0].judged == 9
    assert verdicts(run_dir, "pr")["coa:q4"][:2] == (True, "pass rate: 0.125 (1/8)")


def test_raw_sql_filter_with_sources_and_where(run_dir, tmp_path):
    config = write_config(tmp_path, """
filters:
  - name: answered
    sql: "final_answer IS NOT NULL OR completion LIKE '%<answer>%'"
    reason: no answer
  - name: long_coa
    sql: "n_turns >= 12 AND coalesce(reason, '') NOT LIKE '%;%'"  # a ';' inside a string is fine
    sources: [coa]
    where: verified
""")
    run_filters(run_dir, config)
    answered = verdicts(run_dir, "answered")
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT count(*) FROM trajectories")[0][0] == 8
    assert {tid for tid, (keep, *_) in answered.items() if keep} == {"coa:q1", "coa:q2", "coa:q3", "import:x1"}
    assert answered["refine:p1"][1] == "no answer"
    long_coa = verdicts(run_dir, "long_coa")
    assert long_coa["coa:q2"][:2] == (False, "failed long_coa")  # in scope: coa and verified
    assert long_coa["coa:q4"][:2] == (True, None)  # not verified: outside the scope, kept
    assert long_coa["import:x1"][:2] == (True, None) and long_coa["refine:p1"][:2] == (True, None)


@pytest.mark.parametrize("text, message", [
    ("filters: [{name: a, kind: complexity\n", "not valid YAML at line"),
    ("filters: [{name: a, kind: sparkle}]", "filters.0 (a): field 'kind': unknown filter kind 'sparkle' (use one of:"),
    ("filters: [{name: a}]", "field 'kind': missing 'kind' (or 'sql')"),
    ("filters: [{name: a, kind: [complexity]}]", "field 'kind': unknown filter kind '['complexity']'"),
    ("filters: [3]", "filters.0: expected a mapping with 'name' and 'kind' (or 'sql'), got int"),
    ("filters: [{name: a, kind: complexity, min_tools: 5}]", "filters.0 (a): field 'min_tools': unknown field"),
    ("filters: [{name: a, kind: complexity, min_tool_calls: -1}]", "field 'min_tool_calls': Input should be greater"),
    ("filters: [{name: a, kind: split, splits: {sft: 0.5, rl: 0.2}}]", "split shares must be >= 0 and sum to 1"),
    ("filters: [{name: a, kind: pass_rate}]", "name the policy model's rollouts label"),
    ("filters: [{name: a, sql: 'true'}, {name: a, sql: 'false'}]", "filters.1: field 'name': 'a' is used twice"),
    ("filters: []", "field 'filters': expected a non-empty list"),
    ("filter: [{name: a, sql: 'true'}]", "field 'filter': unknown field"),
    ("filters: [{name: 'bad name', sql: 'true'}]", "field 'name': String should match pattern"),
    ("filters: [{name: a, sql: 'no_such_column > 1'}]", "filter 'a' field 'sql': Binder Error: Referenced column"),
    ("filters: [{name: a, sql: 'n_turns >'}]", "filter 'a' field 'sql': Parser Error: syntax error"),
    ("filters: [{name: a, sql: 'n_turns'}]", "field 'sql': must be a true/false predicate, got a INTEGER"),
    ("filters: [{name: a, sql: 'true) ; DROP TABLE trajectories; SELECT (1'}]", "field 'sql': one predicate only"),
    ("filters: [{name: a, kind: dedup, where: 'nope = 1'}]", "filter 'a' field 'where': Binder Error"),
])
def test_bad_config_is_one_line_naming_file_and_field(run_dir, tmp_path, text, message):
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        run_filters(run_dir, path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)
    assert "\n" not in str(caught.value)
    with Store.open(run_dir, read_only=True) as store:  # nothing was written
        assert store.query("SELECT count(*) FROM filter_verdicts")[0][0] == 0


def test_missing_store_and_missing_config(tmp_path):
    with pytest.raises(FactoryError, match="no run store at"):
        run_filters(tmp_path / "nowhere", write_config(tmp_path, "filters: [{name: a, sql: 'true'}]"))
    with pytest.raises(ConfigError, match="cannot read filter config"):
        run_filters(tmp_path, tmp_path / "absent.yaml")


def verdict_times(run_dir: Path) -> dict[tuple[str, str], datetime]:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query("SELECT filter, trajectory_id, created_at FROM filter_verdicts")
    return {(f, tid): at for f, tid, at in rows}


def test_rerun_recomputes_only_what_changed(run_dir, tmp_path):
    first = run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    assert {o.mode for o in first.filters} == {"new"} and all(o.judged == 8 for o in first.filters)
    stamps = verdict_times(run_dir)

    same = run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    assert [(o.mode, o.judged) for o in same.filters] == [("unchanged", 0)] * 8
    assert verdict_times(run_dir) == stamps

    with Store.open(run_dir) as store:  # one new trajectory arrives
        add_coa(store, "coa:q9", "How tall is the Eiffel tower", 20, correct=True, stats=coa_stats(7), n_turns=15)
    grown = run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    modes = {o.name: (o.mode, o.judged) for o in grown.filters}
    assert modes["complex"] == ("incremental", 1) and modes["split"] == ("incremental", 1)
    assert modes["unique"] == ("new rows", 9)  # dedup depends on every row: judged again in full
    after = verdict_times(run_dir)
    assert all(after[key] == at for key, at in stamps.items() if key[0] != "unique")

    changed = write_config(tmp_path, ALL_BUILTINS.replace("min_tool_calls: 5", "min_tool_calls: 6"))
    modes = {o.name: (o.mode, o.judged) for o in run_filters(run_dir, changed).filters}
    assert modes["complex"] == ("changed", 9)
    others = [run for name, run in modes.items() if name != "complex"]
    assert all(mode in ("incremental", "unchanged") and n == 0 for mode, n in others)
    assert verdicts(run_dir, "complex")["import:x1"][0] is True and verdicts(run_dir, "complex")["coa:q3"][0] is False


def test_rewritten_and_deleted_rows_are_judged_again(run_dir, tmp_path):
    config = write_config(tmp_path, "filters: [{name: c, kind: complexity}, {name: d, kind: dedup}]")
    run_filters(run_dir, config)
    with Store.open(run_dir) as store:  # a rerun of a stage replaces a row (newer created_at) and another is gone
        add_coa(store, "coa:q2", "A different question now", 0, stats=coa_stats(9), created_at=utcnow())
        store.execute("DELETE FROM trajectories WHERE trajectory_id = 'refine:p3'")
    modes = {o.name: (o.mode, o.judged) for o in run_filters(run_dir, config).filters}
    assert modes == {"c": ("incremental", 1), "d": ("new rows", 7)}
    assert verdicts(run_dir, "c")["coa:q2"][0] is True and "refine:p3" not in verdicts(run_dir, "c")
    assert verdicts(run_dir, "d")["coa:q2"][:2] == (True, None)


def test_filter_removed_from_config_loses_its_verdicts(run_dir, tmp_path):
    run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    fewer = write_config(tmp_path, "filters: [{name: complex, kind: complexity, min_tool_calls: 5}]")
    report = run_filters(run_dir, fewer)
    assert set(report.removed) == {"reflective", "correct", "no_repeats", "unique", "upsample", "split", "long_enough"}
    assert report.removed["unique"] == 8
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT DISTINCT filter FROM filter_verdicts") == [("complex",)]
        assert store.query("SELECT filter FROM filter_configs") == [("complex",)]
        kept_ids = {r[0] for r in store.query("SELECT trajectory_id FROM curation WHERE keep")}
    assert kept_ids == {"coa:q1", "coa:q3", "import:x1", "refine:p2"}
    assert "removed from the config: unique (8 verdicts deleted)" in format_funnel(report)


def test_funnel_text(run_dir, tmp_path):
    report = run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    text = format_funnel(report)
    print(text)
    lines = text.splitlines()
    assert lines[0] == "filters over 8 trajectories (coa 4, import 1, refine 3)"
    row = next(line for line in lines if " complex " in line).split()
    assert row[:8] == ["1", "complex", "complexity", "new", "8", "4", "4", "4"]  # judged, kept, dropped, left
    assert "dropped by source: coa 2, refine 2; by reason: too few tool calls 4" in text
    assert "by reason: duplicate 1, near-duplicate 1" in text
    assert "kept with a note: upsampled 2" in text
    assert [o.left for o in report.filters] == [4, 3, 3, 1, 1, 1, 1, 1]
    assert report.kept == 1 and report.kept_by_source == {"coa": 1}
    assert report.weight == 3.0  # coa:q1 recovered from a low double-check: weight 3
    split = verdicts(run_dir, "split")["coa:q1"][3]
    assert lines[-1] == f"kept 1 of 8 (coa 1); weighted size 3; split: {split} 1"


def test_command_prints_the_funnel(run_dir, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="factory")
    add_filter_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["filter", str(run_dir), "--config", str(write_config(tmp_path, ALL_BUILTINS))])
    assert args.func(args) == 0
    assert "kept 1 of 8 (coa 1)" in capsys.readouterr().out


def test_example_config_runs(run_dir):
    example = Path(__file__).resolve().parent.parent / "examples" / "filters.yaml"
    report = run_filters(run_dir, example)
    assert report.total == 8 and len(report.filters) >= 7


def test_pass_rate_samples_missing_rollouts_through_factory_passrate(server, fast_config, tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(row) for row in [
        {"id": 1, "question": "What is the capital of France?", "answer": "Paris", "data_source": "mini"},
        {"id": 2, "question": "What is the capital of Peru?", "answer": "Lima", "data_source": "mini"},
    ]))
    server.route("capital of France", *[ok(f"<think>Recall.</think>\n<answer>{city}</answer>")
                                        for city in ("Paris", "Lyon", "Nice", "Lille")])
    server.route("capital of Peru", *[ok("<think>Recall.</think>\n<answer>Cusco</answer>")] * 4)
    with Store.open(tmp_path) as store:
        add_coa(store, "coa:m1", "What is the capital of France?", 1, task_id="mini/1", stats=coa_stats(5))
        add_coa(store, "coa:m2", "What is the capital of Peru?", 2, task_id="mini/2", stats=coa_stats(5))
    policy = fast_config().model_dump(mode="json", include={"model", "base_url", "timeout_s", "max_retries",
                                                             "backoff_base_s", "backoff_max_s"})
    config = write_config(tmp_path, yaml.safe_dump({"filters": [{
        "name": "pr", "kind": "pass_rate", "model": "policy-a", "tasks": str(tasks), "policy": policy,
        "samples": 4, "min_samples": 4, "concurrency": 2}]}))
    report = run_filters(tmp_path, config)
    assert report.sampled["pr"]["rollouts"] == 8 and len(server.requests) == 8
    v = verdicts(tmp_path, "pr")
    assert v["coa:m1"][:2] == (True, "pass rate: 0.25 (1/4)")
    assert v["coa:m2"][:2] == (True, "uniform group: all 4 rollouts wrong")
    again = run_filters(tmp_path, config)  # everything sampled already: no request, nothing to judge
    assert len(server.requests) == 8 and (again.filters[0].mode, again.filters[0].judged) == ("unchanged", 0)


def test_split_point_matches_the_plain_md5_modulo(tmp_path):
    """md5_mod splits the 128-bit md5 into 64-bit halves for speed; it must give the same number."""
    from factory.filters.rules import md5_mod

    keys = ["", "task-1", "p42", "script:p7", "ünïcödé ключ", "x" * 500, "salt" + "task-999999"]
    with Store.open(tmp_path) as store:
        rows = store.query(f"SELECT k, md5_number(k) % 1000000, {md5_mod('k', 1_000_000)}, md5_number(k) % 7, "
                           f"{md5_mod('k', 7)} FROM unnest(?::VARCHAR[]) u(k)", [keys])  # fmt: skip
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
    with Store(run_dir / "factory.duckdb") as store:
        store.execute("UPDATE trajectories SET turns = '[{\"role\": \"assistant\", \"content\": ' "
                      "WHERE trajectory_id = 'refine:p1'")
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: red, kind: redundancy}]"))
    v = verdicts(run_dir, "red")
    assert v["refine:p1"] == (True, None, 1.0, None)
    assert v["refine:p2"][:2] == (False, "repeated tool input: 'go(garden)' x2")


def test_first_run_inserts_and_a_changed_config_replaces_in_place(run_dir, tmp_path):
    """A filter with no verdicts yet is written by a plain INSERT; a changed one replaces its verdicts."""
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 5}]"))
    first = verdicts(run_dir, "c")
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 6}]"))
    second = verdicts(run_dir, "c")
    assert set(first) == set(second) and len(second) == 8
    assert first["coa:q3"][0] is True and second["coa:q3"] == (False, "too few tool calls: 5 < 6", 1.0, None)
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT count(*) FROM filter_verdicts WHERE filter = 'c'")[0][0] == 8
