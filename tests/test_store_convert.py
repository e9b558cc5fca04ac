"""`factory store convert`: a run folder of factory <= 0.37 (a DuckDB store and its call journal) into SQLite."""

import json
from datetime import datetime

import duckdb

from factory.cli import main
from factory.store import Store

# The tables as factory 0.37's migrations left them (the columns these tests read, in their DuckDB types).
OLD_SCHEMA = """
CREATE TABLE migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP);
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, command VARCHAR, config VARCHAR, started_at TIMESTAMP,
                   finished_at TIMESTAMP, status VARCHAR);
CREATE TABLE llm_calls (request_hash VARCHAR PRIMARY KEY, run_id VARCHAR, stage VARCHAR, status VARCHAR,
                        response VARCHAR, attempts INTEGER, cost_usd DOUBLE, started_at TIMESTAMP,
                        finished_at TIMESTAMP, cache_hits INTEGER DEFAULT 0, batch_id VARCHAR);
CREATE TABLE trajectories (trajectory_id VARCHAR PRIMARY KEY, source VARCHAR, verified BOOLEAN,
                           observation_spans JSON, tool_inputs VARCHAR[], created_at TIMESTAMP);
CREATE TABLE obsolete_table (x INTEGER);
"""
WHEN = datetime(2026, 11, 20, 8, 30, 0, 123456)


def old_run_folder(tmp_path, journal_lines=()):
    con = duckdb.connect(str(tmp_path / "factory.duckdb"))
    con.execute(OLD_SCHEMA)
    con.execute("INSERT INTO migrations VALUES ('0014_preference_pairs', now())")
    con.execute("INSERT INTO runs VALUES ('r1', 'refine', '{}', ?, NULL, 'running')", [WHEN])
    con.execute("INSERT INTO llm_calls VALUES ('k1', 'r1', 'script', 'ok', 'an answer', 2, 0.5, ?, ?, 3, NULL)",
                [WHEN, WHEN])  # fmt: skip
    con.execute("INSERT INTO trajectories VALUES ('t1', 'refine', true, '[[0, 4]]', ['go north', 'take key'], ?)",
                [WHEN])  # fmt: skip
    con.execute("INSERT INTO obsolete_table VALUES (1)")
    con.close()
    lines = [json.dumps(line) for line in journal_lines]
    (tmp_path / "factory.calls.jsonl").write_bytes("\n".join(lines).encode() + b"\n" + b"\0" * 64)


def test_an_old_run_folder_converts_with_its_rows_types_and_journal(tmp_path, capsys):
    answered = {"status": "ok", "response": "late answer", "attempts": 1, "finished_at": "2026-11-20T09:00:00"}
    old_run_folder(tmp_path, [
        {"k": "k1", "e": "start", "row": {"stage": "script"}},  # already in the store: not added twice
        {"k": "k1", "e": "answer", "row": {"status": "ok", "response": "an answer", "attempts": 2,
                                           "finished_at": WHEN.isoformat()}},
        {"k": "k2", "e": "start", "row": {"stage": "dm", "run_id": "r1"}}, {"k": "k2", "e": "try"},
        {"k": "k2", "e": "answer", "row": answered},  # came back after the last flush
        {"k": "k3", "e": "start", "row": {"stage": "dm", "run_id": "r1"}}, {"k": "k3", "e": "try"},  # cut off
    ])  # fmt: skip
    assert main(["store", "convert", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == f"converted {tmp_path}: llm_calls 1, runs 1, trajectories 1, journal answers 2, journal attempts 1\n"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "factory.calls.jsonl.converted", "factory.duckdb.converted", "factory.sqlite"
    ]  # fmt: skip
    with Store.open(tmp_path) as store:  # a writer: the dead run is marked, its cut-off call settled on first use
        assert store.query("SELECT trajectory_id, verified, observation_spans, tool_inputs, created_at FROM trajectories") == [
            ("t1", True, "[[0, 4]]", ["go north", "take key"], WHEN)
        ]  # fmt: skip
        assert store.query("SELECT status FROM runs") == [("interrupted",)]
        calls = store.query("SELECT request_hash, status, response, attempts, cache_hits FROM llm_calls ORDER BY 1")
        assert calls == [("k1", "ok", "an answer", 2, 3), ("k2", "ok", "late answer", 1, 0)]
        from factory.llm.calllog import CallLog

        assert CallLog(store).lost_attempts == 1
        assert store.query("SELECT status, error_kind, stage FROM llm_calls WHERE request_hash = 'k3'") == [
            ("error", "interrupted", "dm")
        ]


def test_converting_twice_or_nothing_is_one_line(tmp_path, capsys):
    assert main(["store", "convert", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path} has no factory.duckdb to convert\n"
    old_run_folder(tmp_path)
    assert main(["store", "convert", str(tmp_path)]) == 0
    assert main(["store", "convert", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path} already has factory.sqlite: nothing to convert\n"
    assert main(["store", "check", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("factory.sqlite: ok\n")


def test_a_command_on_an_old_run_folder_says_how_to_convert_it(tmp_path, capsys):
    old_run_folder(tmp_path)
    assert main(["calls", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {tmp_path} holds a store of an older factory (factory.duckdb); "
        f"convert it with: factory store convert {tmp_path}\n"
    )
