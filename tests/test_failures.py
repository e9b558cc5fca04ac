"""Failure reasons in plain sight: grouped, counted, one example each, for every stage that can fail."""

from datetime import datetime, timezone

import pytest
from filter_rows import seed_run, write_config

from factory.failures import failure_sections, format_failures, normalise
from factory.filters.runner import run_filters
from factory.refine.store import save_script
from factory.store import Store

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def add_call(store: Store, key: str, stage: str, kind: str | None, error: str | None = None) -> None:
    store.upsert("llm_calls", {"request_hash": key * 8, "run_id": "r", "stage": stage, "model": "m",
                               "status": "ok" if kind is None else "error", "error_kind": kind, "error": error,
                               "attempts": 1, "started_at": T0})  # fmt: skip


def add_verdict(store: Store, tid: str, attempt: int, ok: bool, rule: str | None = None, reason: str = "") -> None:
    store.upsert(
        "verdicts",
        {"trajectory_id": tid, "attempt": attempt, "ok": ok, "rule": rule, "reason": reason, "created_at": T0},
    )


@pytest.fixture
def run(tmp_path):
    run_dir = seed_run(tmp_path / "run")  # refine p3 unverified, coa q4 a broken distillation, q2 answered wrong
    with Store.open(run_dir) as store:
        save_script(store, "p7:0", "p7", 0, None, ["goal requires unknown location 'garden'", "unreachable goal"])
        save_script(store, "p8:0", "p8", 0, None, ["goal requires unknown location 'attic'"])
        save_script(store, "p8:1", "p8", 1, None, ["action 'take' changes nothing in 3 states"])
        add_verdict(store, "refine:p3", 0, False, "dm_disagrees", "step 2: the DM said valid, the world says 'no key'")
        add_verdict(store, "refine:p3", 1, False, "dm_disagrees", "step 4: the DM said valid, the world says 'no map'")
        add_verdict(store, "refine:p1", 0, False, "llm_error", "format: a thought left blank")
        add_verdict(store, "refine:p1", 1, True)
        store.upsert(
            "coa_traces",
            {
                "trace_id": "coa:q5",
                "task_id": "t5",
                "source": "mas",
                "variant": "mas",
                "status": "timeout",
                "reason": "ran past 300 s after 4 events",
                "created_at": T0,
            },
        )
        add_call(store, "a", "script", "server", "HTTP 500 from http://127.0.0.1:1/v1\ntrace")
        add_call(store, "b", "trajectory", "server", "HTTP 500 from http://127.0.0.1:1/v1")
        add_call(store, "c", "coa_planner", "context_length", "prompt of 9000 tokens")
        add_call(store, "d", "script", None)
    return run_dir


def by_name(run, paths=None):
    with Store.open(run, read_only=True) as store:
        return {s.name: s for s in failure_sections(store, paths)}


def test_names_in_reasons_group_and_one_raw_example_is_kept():
    assert normalise("goal requires unknown location 'garden'") == normalise("goal requires  unknown location 'attic'")
    assert normalise("ran past 300 s after 4 events") == "ran past N s after N events"


def test_failed_scripts_are_counted_by_reason_with_an_example(run):
    scripts = by_name(run)["scripts"]
    assert scripts.failed == 3  # attempts
    top = scripts.reasons[0]
    assert (top.count, top.text) == (2, "goal requires unknown location '…'")
    assert top.example_id == "p7:0 try 0" and top.example == "goal requires unknown location 'garden'"
    assert {r.text for r in scripts.reasons} >= {"unreachable goal", "action '…' changes nothing in N states"}


def test_verifier_losses_and_recovered_attempts_are_told_apart(run):
    verify = by_name(run)["verify"]
    assert verify.failed == 3 and verify.note.startswith("1 of them recovered")
    texts = [(r.count, r.text) for r in verify.reasons]
    assert texts[0] == (2, "dm_disagrees: step N: the DM said valid, the world says '…'")
    assert (1, "recovered: llm_error: format: a thought left blank") in texts


def test_coa_failures_hold_run_status_grammar_rule_and_wrong_answers(run):
    traces = {r.text: r for r in by_name(run)["traces"].reasons}
    assert traces["timeout: ran past N s after N events"].example_id == "coa:q5"
    assert any(t.startswith("distillation unclosed_tag: grammar unclosed_tag") for t in traces)
    assert traces["answer checked wrong"].example_id == "coa:q2"


def test_call_errors_are_by_kind_and_by_path(run):
    calls = by_name(run)["calls"]
    assert calls.failed == 3 and calls.reasons[0].count == 2 and calls.reasons[0].text.startswith("server: HTTP N")
    assert by_name(run, ["refine"])["calls"].failed == 2 and by_name(run, ["coa"])["calls"].failed == 1


def test_filter_drops_are_reasons_too(run, tmp_path):
    run_filters(run, write_config(tmp_path, "filters: [{name: deep, kind: complexity, min_tool_calls: 5}]"))
    filters = by_name(run, ["filter"])["filters"]
    assert filters.failed >= 1 and all(r.text.startswith("deep: ") for r in filters.reasons)


def test_the_text_shows_the_top_reasons_and_how_many_more(run):
    text = format_failures(run, ["refine"], top=1)
    assert "failures, script attempts that failed verification: 3" in text
    example = "e.g. goal requires unknown location 'garden'"
    assert f"   2 × goal requires unknown location '…'  [p7:0 try 0] — {example}" in text
    assert "… and 2 more reasons (2 items)" in text
    assert "failures, LLM calls that ended in an error: 2" in text


def test_a_clean_run_says_none_recorded(tmp_path):
    with Store.open(tmp_path / "run"):
        pass
    assert format_failures(tmp_path / "run") == "failures: none recorded"


def test_factory_refine_prints_the_failures_of_its_run(tmp_path, capsys):
    """A real run over loopback HTTP: the second persona's recorded replies are missing, so its calls fail."""
    from refine_replay import ReplayServer, load_replay_set, write_personas
    from test_pipeline import REPLAY_SET

    from factory.cli import main

    recordings = load_replay_set(REPLAY_SET)[:2]
    personas = write_personas(recordings, tmp_path / "personas.jsonl")
    server = ReplayServer(recordings[:1])  # knows only the first persona
    base_url = server.start_in_thread()
    try:
        code = main(["refine", "--model", "replay", "--base-url", base_url, "--personas", str(personas), "--count", "2",
                     "--no-code", str(tmp_path / "run"), "-q"])  # fmt: skip
    finally:
        server.stop()
    out = capsys.readouterr().out
    assert code == 0
    assert format_failures(tmp_path / "run", ["refine"]) in out
    assert "failures, LLM calls that ended in an error: " in out and "bad_request: " in out


def test_the_report_has_a_failures_section_per_stage_with_examples(run, tmp_path):
    from factory.reporting.build import write_report

    with Store.open(run) as store:
        save_script(store, "p9:0", "p9", 0, None, ["<script>alert(1)</script> is not an action"])
    html = write_report(run, tmp_path / "report.html").read_text(encoding="utf-8")
    failures = html.split('<section id="failures">')[1].split("</section>")[0]
    for table in ("failures-scripts", "failures-verify", "failures-traces", "failures-calls"):
        assert f'data-table="{table}"' in failures
    assert 'goal requires unknown location &#x27;…&#x27;</td><td class="num">2</td><td>p7:0 try 0</td>' in failures
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in failures
