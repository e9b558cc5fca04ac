"""The run store: migrations, transactions, types read back, several processes, old folders."""

import json
import subprocess
import sys
from datetime import datetime

import pytest

from factory.errors import FactoryError
from factory.store import MIGRATIONS, Store


def test_new_store_applies_all_migrations_in_order(tmp_path):
    store = Store.open(tmp_path / "run")
    assert store.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert (tmp_path / "run" / "factory.sqlite").is_file()
    assert store.migrate() == []  # idempotent


def test_values_read_back_in_the_types_the_schema_declares(tmp_path):
    """SQLite keeps timestamps as text, booleans as 0/1 and lists as JSON: queries see the declared types."""
    store = Store(tmp_path / "f.sqlite")
    when = datetime(2026, 11, 28, 4, 5, 6, 789)
    store.upsert("trajectories", {"trajectory_id": "t", "verified": True, "created_at": when,
                                  "tool_inputs": ["a", "b"], "observation_spans": [[1, 2]], "n_turns": 3})  # fmt: skip
    row = store.query("SELECT verified, created_at, tool_inputs, observation_spans, n_turns FROM trajectories")
    assert row == [(True, when, ["a", "b"], "[[1, 2]]", 3)]
    assert store.query("SELECT list_contains(tool_inputs, 'b') FROM trajectories") == [(True,)]  # DuckDB's dialect


def test_the_curation_view_folds_verdicts(tmp_path):
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("filter_verdicts", {"trajectory_id": ["t1", "t1"], "filter": ["a", "b"], "keep": [False, True],
                                          "reason": ["too short", None], "weight": [1.0, 2.0]})  # fmt: skip
    assert store.query("SELECT keep, weight, dropped_by, drop_reasons FROM curation") == [
        (False, 2.0, ["a"], ["too short"])
    ]


def test_traces_stored_without_tools_count_the_tools_their_calls_used(tmp_path):
    from factory.coa import Event, ToolCall, Trace, load_trace, save_trace

    store = Store(tmp_path / "f.sqlite")
    call = {"agent": "search_agent", "kind": "tool_call",
            "tool": {"name": "crawl_page", "argument": "corpus://a", "ok": True, "result": "A."}}  # fmt: skip
    store.execute(
        "INSERT INTO coa_traces (trace_id, source, variant, question, status, agents, events, duration_s) "
        "VALUES ('old', 'mas', 'mas', 'Q?', 'answered', '{}', ?, 1.0)",
        [json.dumps([call])],
    )
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
    store = Store(tmp_path / "f.sqlite")
    with pytest.raises(RuntimeError):
        with store.transaction() as con:
            con.execute("INSERT INTO runs (run_id) VALUES ('half')")
            raise RuntimeError("killed mid-write")
    assert store.query("SELECT count(*) FROM runs") == [(0,)]


def test_insert_rows_replace_keeps_one_row_per_key(tmp_path):
    store = Store(tmp_path / "f.sqlite")
    for status in ("error", "ok"):
        store.insert_rows(
            "llm_calls", {"request_hash": ["a", "b"], "status": [status, status]}, verb="INSERT OR REPLACE"
        )
    assert store.query("SELECT request_hash, status FROM llm_calls ORDER BY 1") == [("a", "ok"), ("b", "ok")]


def test_a_query_sees_what_another_process_committed(tmp_path):
    """A store held open (a notebook, `factory show`) sees another process's commits on its next query."""
    reader = Store(tmp_path / "f.sqlite", read_only=False)
    assert reader.query("SELECT count(*) FROM runs") == [(0,)]
    code = (
        "from factory.store import Store\n"
        f"s = Store(r'{tmp_path / 'f.sqlite'}')\n"
        "s.execute(\"INSERT INTO runs (run_id, status) VALUES ('other', 'done')\")\n"
        "s.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # the second writer was not refused
    assert reader.query("SELECT run_id FROM runs") == [("other",)]
    reader.close()


def test_an_old_duckdb_run_folder_is_refused_with_the_command_that_converts_it(tmp_path):
    (tmp_path / "factory.duckdb").write_bytes(b"")
    with pytest.raises(FactoryError) as raised:
        Store.open(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path} holds a store of an older factory (factory.duckdb); convert it with: factory store convert {tmp_path}"
    )


def test_read_only_open_of_a_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(FactoryError, match="no run store"):
        Store.open(tmp_path / "nothing", read_only=True)


def test_a_copy_holds_the_columns_asked_and_takes_a_bulky_one_on_when_a_query_names_it(tmp_path):
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("trajectories", {"trajectory_id": ["a", "b"], "turns": ["[1]", "[2]"], "n_turns": [1, 2]})
    assert store.query("SELECT sum(n_turns) FROM trajectories") == [(3,)]
    assert "turns" not in store.reader.loaded["trajectories"]  # not copied for a sum
    assert store.query("SELECT trajectory_id, turns FROM trajectories ORDER BY 1") == [("a", "[1]"), ("b", "[2]")]
    columns = [row[0] for row in store.query("DESCRIBE trajectories")]
    assert columns == [row[1] for row in store.lookup("PRAGMA table_info(trajectories)")]  # the table's own order


def test_the_filter_runner_s_own_duckdb_spills_under_the_temp_folder_not_the_working_one(tmp_path):
    """DuckDB's default temp_directory is `.tmp` in the working folder: a user's folder would get one."""
    import tempfile

    store = Store(tmp_path / "f.sqlite")
    store.reader.isolate()  # as the filter runner does before shutting host files
    spill = store.query("SELECT current_setting('temp_directory')")[0][0]
    assert spill.startswith(tempfile.gettempdir()) and ".tmp" not in spill.split("/")
