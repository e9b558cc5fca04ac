"""The run store: migrations, transactions, old folders."""

import json

import duckdb
import pytest

from factory.errors import FactoryError
from factory.store import MIGRATIONS, Store


def test_new_store_applies_all_migrations_in_order(tmp_path):
    store = Store.open(tmp_path / "run")
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert (tmp_path / "run" / "factory.duckdb").is_file()


def test_opening_an_old_run_folder_migrates_it(tmp_path):
    path = tmp_path / "factory.duckdb"
    con = duckdb.connect(str(path))  # a store written by an older version: first migration only
    con.execute("CREATE TABLE migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)")
    name, sql = MIGRATIONS[0]
    con.execute(sql)
    con.execute("INSERT INTO migrations VALUES (?, now())", [name])
    con.execute("INSERT INTO runs (run_id, status) VALUES ('old', 'done')")
    con.close()
    store = Store(path)
    assert store.applied_migrations() == [n for n, _ in MIGRATIONS]
    assert store.query("SELECT run_id FROM runs") == [("old",)]
    assert store.migrate() == []  # idempotent


def test_verdicts_written_before_0008_survive_the_unindexed_table(tmp_path):
    path = tmp_path / "factory.duckdb"
    con = duckdb.connect(str(path))  # a store at 0007: filter_verdicts still has its primary key
    con.execute("CREATE TABLE migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)")
    upto = [n for n, _ in MIGRATIONS].index("0007_curation") + 1
    for name, sql in MIGRATIONS[:upto]:
        con.execute(sql)
        con.execute("INSERT INTO migrations VALUES (?, now())", [name])
    con.execute(
        "INSERT INTO filter_verdicts (trajectory_id, filter, keep, reason, weight) VALUES "
        "('t1', 'a', false, 'too short', 1.0), ('t1', 'b', true, NULL, 2.0)"
    )
    con.close()
    store = Store(path)
    assert store.query("SELECT keep, weight, dropped_by, drop_reasons FROM curation") == [
        (False, 2.0, ["a"], ["too short"])
    ]
    indexes = store.query(
        "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'filter_verdicts' "
        "AND constraint_type = 'PRIMARY KEY'"
    )
    assert indexes == [(0,)]


def test_traces_written_before_0010_count_the_tools_their_calls_used(tmp_path):
    from factory.coa import Event, ToolCall, Trace, load_trace, save_trace

    path = tmp_path / "factory.duckdb"
    con = duckdb.connect(str(path))  # a store at 0009: coa_traces has no tools column
    con.execute("CREATE TABLE migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)")
    upto = [n for n, _ in MIGRATIONS].index("0009_tool_inputs") + 1
    for name, sql in MIGRATIONS[:upto]:
        con.execute(sql)
        con.execute("INSERT INTO migrations VALUES (?, now())", [name])
    call = {
        "agent": "search_agent",
        "kind": "tool_call",
        "tool": {"name": "crawl_page", "argument": "corpus://a", "ok": True, "result": "A."},
    }
    con.execute(
        "INSERT INTO coa_traces (trace_id, source, variant, question, status, agents, events, duration_s) "
        "VALUES ('old', 'mas', 'mas', 'Q?', 'answered', '{}', ?, 1.0)",
        [json.dumps([call])],
    )
    con.close()
    store = Store(path)
    assert store.applied_migrations()[-1] == MIGRATIONS[-1][0]
    old = load_trace(store, "old")
    assert old.tools == [] and old.offered_tools() == ["crawl_page"]
    offered = Trace(trace_id="new", variant="mas", question="Q?", tools=["web_search", "crawl_page", "code"],
                    events=[Event(agent="search_agent", kind="tool_call", tool=ToolCall(
                        name="web_search", argument="q", ok=True, result="r"))])  # fmt: skip
    save_trace(store, offered)
    assert load_trace(store, "new").offered_tools() == ["web_search", "crawl_page", "code"]  # offered, not used
    save_trace(store, offered.model_copy(update={"trace_id": "none", "tools": [], "events": []}))
    assert store.query("SELECT tools FROM coa_traces WHERE trace_id = 'none'") == [([],)]


def test_failed_transaction_leaves_nothing(tmp_path):
    store = Store(tmp_path / "f.duckdb")
    with pytest.raises(RuntimeError):
        with store.transaction() as con:
            con.execute("INSERT INTO runs (run_id) VALUES ('half')")
            raise RuntimeError("killed mid-write")
    assert store.query("SELECT count(*) FROM runs") == [(0,)]


def test_insert_rows_replace_keeps_one_row_per_key(tmp_path):
    store = Store(tmp_path / "f.duckdb")
    for status in ("error", "ok"):
        store.insert_rows("llm_calls", {"request_hash": ["a", "b"], "status": [status, status]}, replace=True)
    assert store.query("SELECT request_hash, status FROM llm_calls ORDER BY 1") == [("a", "ok"), ("b", "ok")]


def test_a_store_in_use_gives_a_one_line_error(tmp_path):
    writer = Store(tmp_path / "f.duckdb")
    code = (
        "from factory.store import Store\n"
        "from factory.errors import FactoryError\n"
        f"try:\n    Store(r'{tmp_path / 'f.duckdb'}')\nexcept FactoryError as e:\n    print('ERR', e)\n"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("ERR cannot open run store") and out.count("\n") == 1
    writer.close()


def test_read_only_open_of_a_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(FactoryError, match="no run store"):
        Store.open(tmp_path / "nothing", read_only=True)
