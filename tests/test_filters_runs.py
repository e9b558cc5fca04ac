"""Filter runs on a real DuckDB store: pass rate, raw SQL, bad configs, reruns, the funnel and the command."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
from filter_rows import ALL_BUILTINS, add_coa, add_rollouts, coa_stats, seed_run, verdict_times, verdicts, write_config

from factory.errors import ConfigError, FactoryError
from factory.filters import format_funnel, run_filters
from factory.filters.command import add_filter_parser
from factory.filters.passrate import MissingRollouts
from factory.store import Store, utcnow

HOST_FILES_SHUT = "file system operations are disabled by configuration"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return seed_run(tmp_path)


def test_pass_rate_keeps_hard_queries_and_reports_uniform_groups(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        add_rollouts(store, "task-q1", "policy", [True] * 2 + [False] * 6)  # 0.25: kept
        add_rollouts(store, "task-q2", "policy", [False] * 8)  # all wrong: kept, flagged uniform
        add_rollouts(store, "task-q3", "policy", [True] * 4 + [False] * 4 + [None] * 8)  # 0.5 of 8 judged
        add_rollouts(store, "task-q4", "policy", [False] * 3)  # too few
        add_rollouts(store, "task-q1", "other", [True] * 8)  # another model's rollouts do not count
        add_coa(
            store,
            "coa:c1",
            "Write a function that reverses a list",
            10,
            task_id="task-c1",
            domain="code",
            stats=coa_stats(5),
        )
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
    config = write_config(
        tmp_path,
        """
filters:
  - name: answered
    sql: "final_answer IS NOT NULL OR completion LIKE '%<answer>%'"
    reason: no answer
  - name: long_coa
    sql: "n_turns >= 12 AND coalesce(reason, '') NOT LIKE '%;%'"  # a ';' inside a string is fine
    sources: [coa]
    where: verified
""",
    )
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


@pytest.mark.parametrize(
    "text, message",
    [
        ("filters: [{name: a, kind: complexity\n", "not valid YAML at line"),
        (
            "filters: [{name: a, kind: sparkle}]",
            "filters.0 (a): field 'kind': unknown filter kind 'sparkle' (use one of:",
        ),
        ("filters: [{name: a}]", "field 'kind': missing 'kind' (or 'sql')"),
        ("filters: [{name: a, kind: [complexity]}]", "field 'kind': unknown filter kind '['complexity']'"),
        ("filters: [3]", "filters.0: expected a mapping with 'name' and 'kind' (or 'sql'), got int"),
        ("filters: [{name: a, kind: complexity, min_tools: 5}]", "filters.0 (a): field 'min_tools': unknown field"),
        (
            "filters: [{name: a, kind: complexity, min_tool_calls: -1}]",
            "field 'min_tool_calls': Input should be greater",
        ),
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
        # a filter's SQL reads no host file, lists no folder, attaches nothing
        ("filters: [{name: a, sql: \"(SELECT count(*) FROM read_text('/etc/hostname')) > 0\"}]", HOST_FILES_SHUT),
        ("filters: [{name: a, sql: \"EXISTS (SELECT * FROM read_csv('/etc/passwd'))\"}]", HOST_FILES_SHUT),
        ("filters: [{name: a, sql: \"EXISTS (SELECT * FROM glob('/etc/*'))\"}]", HOST_FILES_SHUT),
        ("filters: [{name: a, kind: dedup, where: \"EXISTS (FROM read_blob('/etc/hostname'))\"}]", HOST_FILES_SHUT),
    ],
)
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
    assert lines[-1] == f"kept 1 of 8 (coa 1); not verified 2 (never exported); weighted size 3; split: {split} 1"


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


def test_pass_rate_with_no_rollouts_for_its_label_stops_with_the_command_that_samples_them(run_dir, tmp_path):
    """Nothing sampled (or a mistyped label): the filter does not sample, judges nothing, names the command."""
    config = write_config(tmp_path, "filters: [{name: pr, kind: pass_rate, model: policy, tasks: t.jsonl}]")
    with pytest.raises(MissingRollouts) as caught:
        run_filters(run_dir, config)
    command = f"factory passrate {run_dir} --tasks t.jsonl --model policy --n 8"
    assert str(caught.value) == (
        f"{config}: filter 'pr': no judged rollouts for model 'policy' in this run (the run has no rollouts); "
        f"sample them first: {command}"
    )
    with Store.open(run_dir) as store:
        assert store.query("SELECT count(*) FROM filter_verdicts")[0][0] == 0
        add_rollouts(store, "task-q1", "policy", [True] * 8)
    typo = write_config(tmp_path, "filters: [{name: pr, kind: pass_rate, model: polcy, missing: keep}]")
    with pytest.raises(MissingRollouts, match="for model 'polcy' in this run \\(rollouts hold model: policy\\)"):
        run_filters(run_dir, typo)


def test_pass_rate_with_rollouts_missing_for_some_tasks_drops_keeps_or_fails_as_configured(run_dir, tmp_path):
    with Store.open(run_dir) as store:
        for task in ("task-q1", "task-q2", "task-q3"):
            add_rollouts(store, task, "policy", [True] + [False] * 7)
    base = "{name: pr, kind: pass_rate, model: policy, sources: [coa, import]"
    report = run_filters(run_dir, write_config(tmp_path, f"filters: [{base}}}]"))  # missing: drop
    command = f"factory passrate {run_dir} --tasks TASKS_FILE --model policy --n 8"
    assert verdicts(run_dir, "pr")["coa:q4"][:2] == (False, "too few rollouts: 0 < 8 for model policy")
    assert report.missing_rollouts == [
        f"pr: 2 of 5 tasks have fewer than 8 judged rollouts for model 'policy' (their rows dropped, missing: drop); "
        f"to sample them: {command}"
    ]
    assert "missing rollouts: pr: 2 of 5 tasks" in format_funnel(report)
    run_filters(run_dir, write_config(tmp_path, f"filters: [{base}, missing: keep}}]"))
    assert verdicts(run_dir, "pr")["coa:q4"][:2] == (True, "too few rollouts: 0 < 8 for model policy")
    with pytest.raises(MissingRollouts) as caught:
        run_filters(run_dir, write_config(tmp_path, f"filters: [{base}, missing: fail}}]"))
    assert str(caught.value).endswith(
        f"filter 'pr': 2 of 5 tasks have fewer than 8 judged rollouts for model 'policy'; sample them first: "
        f"{command} (or set missing: drop or keep)"
    )
    assert verdicts(run_dir, "pr")["coa:q4"][0] is True  # the failed run wrote nothing
    with Store.open(run_dir) as store:
        for task in ("task-q4", "task-x1"):
            add_rollouts(store, task, "policy", [False] * 8)
    every = run_filters(run_dir, write_config(tmp_path, f"filters: [{base}, missing: fail}}]"))
    assert every.missing_rollouts == [] and verdicts(run_dir, "pr")["coa:q1"][:2] == (True, "pass rate: 0.125 (1/8)")


def test_a_pass_rate_filter_that_still_asks_to_sample_says_where_sampling_went(run_dir, tmp_path):
    config = write_config(
        tmp_path, "filters: [{name: pr, kind: pass_rate, model: m, tasks: t.jsonl, policy: {model: m}, samples: 4}]"
    )
    with pytest.raises(ConfigError) as caught:
        run_filters(run_dir, config)
    assert str(caught.value).startswith(f"{config}: filters.0 (pr): 'policy': filters only judge the rollouts")
    assert "factory passrate RUN_DIR --tasks FILE --model M" in str(caught.value)


def test_the_filters_never_reach_the_sampler_or_an_llm_client():
    """Filters only judge: no module of factory/filters imports factory.passrate or factory.llm."""
    folder = Path(__file__).resolve().parent.parent / "factory" / "filters"
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                assert not module.startswith(("..passrate", "..llm", "factory.passrate", "factory.llm")), path.name


def test_first_run_inserts_and_a_changed_config_replaces_in_place(run_dir, tmp_path):
    """A changed filter replaces its verdicts: one per trajectory, never a second one beside the old."""
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 5}]"))
    first = verdicts(run_dir, "c")
    run_filters(run_dir, write_config(tmp_path, "filters: [{name: c, kind: complexity, min_tool_calls: 6}]"))
    second = verdicts(run_dir, "c")
    assert set(first) == set(second) and len(second) == 8
    assert first["coa:q3"][0] is True and second["coa:q3"] == (False, "too few tool calls: 5 < 6", 1.0, None)
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT count(*) FROM filter_verdicts WHERE filter = 'c'")[0][0] == 8


def test_report_counts_a_filter_that_lost_rows_or_holds_orphans(run_dir, tmp_path):
    """The report counts kept rows per source by subtraction only for a filter with one verdict per
    trajectory; any other filter (a verdict missing, an orphan) is counted verdict by verdict."""
    from factory.filters.funnel import build_funnel
    from factory.filters.runner import FilterRun

    run_filters(run_dir, write_config(tmp_path, ALL_BUILTINS))
    with Store.open(run_dir) as store:
        store.execute("DELETE FROM filter_verdicts WHERE filter = 'complex' AND trajectory_id = 'refine:p2'")
        store.execute(
            "INSERT INTO filter_verdicts SELECT 'gone:1', filter, false, 'too few tool calls: 0 < 5', "
            "weight, split, config_hash, created_at FROM filter_verdicts WHERE filter = 'reflective' LIMIT 1"
        )
        runs = [
            FilterRun(n, k, p, "unchanged", 0, 0.0)
            for n, k, p in store.query("SELECT filter, kind, position FROM filter_configs ORDER BY position")
        ]
        report = build_funnel(store, runs, {})
        expected = store.query("""
            SELECT v.filter, coalesce(t.source, '?'), v.keep, count(*) FROM filter_verdicts v
            LEFT JOIN trajectories t USING (trajectory_id) GROUP BY ALL""")
    counted = {
        (o.name, s, keep): n
        for o in report.filters
        for keep, side in ((True, o.kept_by_source), (False, o.dropped_by_source))
        for s, n in side.items()
    }
    assert counted == {(name, source, keep): n for name, source, keep, n in expected}
    reflects = next(o for o in report.filters if o.name == "reflective")
    assert reflects.dropped_by_source["?"] == 1 and reflects.drop_reasons["too few tool calls"] == 1
