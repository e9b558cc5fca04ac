"""Copies that catch up (store/changes.py): after inserts, updates, deletes, replaces, rollbacks and
other processes' writes, a query sees exactly what the file holds, and big tables are not copied again."""

import random
import sqlite3
import subprocess
import sys

import pytest

from factory.store import Store
from factory.store import copies as copies_module
from factory.store import reader as reader_module


@pytest.fixture
def copies(monkeypatch):
    """Each copy the store takes: ('whole' | 'rows', table) (the real copy runs)."""
    taken = []

    def recording(db, duck, table, columns, target, only=None):
        taken.append(("whole" if only is None else "rows", table))
        return real(db, duck, table, columns, target, only)

    real = copies_module.copy_rows
    monkeypatch.setattr(reader_module, "copy_rows", recording)
    monkeypatch.setattr("factory.store.changes.copy_rows", recording)
    return taken


def file_rows(store: Store) -> list[tuple]:
    rows = store.lookup("SELECT script_id, attempt, script FROM scripts")
    return sorted(rows, key=lambda row: row[0])


def copy_rows_seen(store: Store) -> list[tuple]:
    return store.query("SELECT script_id, attempt, script FROM scripts ORDER BY script_id")


def test_random_writes_read_back_exactly_as_the_file_holds_them(tmp_path, copies):
    store = Store(tmp_path / "f.sqlite")
    rng = random.Random(7)
    keys = [f"s{i}" for i in range(40)]
    for step in range(300):
        key, attempt = rng.choice(keys), rng.randrange(5)
        op = rng.choice(["insert", "replace", "update", "delete", "many", "rollback", "bulky"])
        if op in ("insert", "replace"):
            store.execute(f"INSERT OR {'IGNORE' if op == 'insert' else 'REPLACE'} INTO scripts "
                          "(script_id, attempt, script) VALUES (?, ?, ?)", [key, attempt, f"{op} {step}"])  # fmt: skip
        elif op == "update":
            store.execute("UPDATE scripts SET attempt = ? WHERE script_id = ?", [attempt, key])
        elif op == "delete":
            store.execute("DELETE FROM scripts WHERE script_id = ?", [key])
        elif op == "many":
            chosen = rng.sample(keys, 5)
            store.insert_rows("scripts", {"script_id": chosen, "attempt": [step] * 5}, verb="INSERT OR REPLACE")
        elif op == "rollback":  # a query inside the transaction saw rows the rollback takes back
            with pytest.raises(RuntimeError), store.transaction() as con:
                con.execute("INSERT OR REPLACE INTO scripts (script_id, attempt) VALUES (?, ?)", [key, 99])
                con.execute("INSERT INTO scripts (script_id, attempt) VALUES (?, ?)", [f"new{step}", 98])
                assert (key, 99) in store.query("SELECT script_id, attempt FROM scripts")
                raise RuntimeError("undo")
        if op == "bulky" or step % 3 == 0:
            assert copy_rows_seen(store) == file_rows(store), f"step {step} after {op}"
        else:
            seen = store.query("SELECT script_id, attempt FROM scripts ORDER BY script_id")
            assert seen == [(k, a) for k, a, _ in file_rows(store)], f"step {step} after {op}"
    caught_up = sum(1 for kind, table in copies if kind == "rows" and table == "scripts")
    assert caught_up > 100  # the copy caught up far more often than it was taken whole


def test_a_filter_run_s_verdicts_catch_up_instead_of_being_copied_again(tmp_path, copies):
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("filter_verdicts", {"trajectory_id": [f"t{i}" for i in range(50_000)], "filter": ["a"] * 50_000,
                                          "keep": [True] * 50_000})  # fmt: skip
    assert store.query("SELECT count(*) FROM curation") == [(50_000,)]
    store.insert_rows("filter_verdicts", {"trajectory_id": [f"t{i}" for i in range(40_000)], "filter": ["b"] * 40_000,
                                          "keep": [i % 2 == 0 for i in range(40_000)]})  # fmt: skip
    store.execute("DELETE FROM filter_verdicts WHERE filter = 'a' AND trajectory_id = 't1'")
    assert store.query("SELECT count(*) FILTER (WHERE keep), count(*) FROM curation") == [(30_000, 50_000)]
    assert [c for c in copies if c[1] == "filter_verdicts"] == [("rows", "filter_verdicts")]  # over a base file
    assert len(list(tmp_path.glob("copies/*-filter_verdicts-*.parquet"))) == 1


def test_a_write_the_log_missed_is_caught_by_the_count(tmp_path, copies):
    """Another program's REPLACE without recursive_triggers deletes a row no trigger logs."""
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("scripts", {"script_id": list("abcd"), "attempt": [1, 1, 1, 1]})
    assert copy_rows_seen(store)[:2] == [("a", 1, None), ("b", 1, None)]
    other = sqlite3.connect(tmp_path / "f.sqlite")
    other.execute("INSERT OR REPLACE INTO scripts (script_id, attempt) VALUES ('a', 2)")
    other.commit()
    other.close()
    assert copy_rows_seen(store)[:2] == [("a", 2, None), ("b", 1, None)]
    assert copies[-2:] == [("rows", "scripts"), ("whole", "scripts")]


def test_another_process_s_updates_and_deletes_reach_a_held_copy(tmp_path, copies):
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("scripts", {"script_id": [f"s{i}" for i in range(100)], "attempt": list(range(100))})
    assert len(copy_rows_seen(store)) == 100
    code = (
        "import sys; from factory.store import Store; s = Store(sys.argv[1]); "
        "s.execute(\"UPDATE scripts SET script = 'edited' WHERE attempt < 10\"); "
        "s.execute('DELETE FROM scripts WHERE attempt >= 90'); "
        "s.upsert('scripts', {'script_id': 's50', 'attempt': 500}); s.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "f.sqlite")], check=True)
    assert copy_rows_seen(store) == file_rows(store)
    assert store.query("SELECT count(*) FILTER (WHERE script = 'edited'), max(attempt) FROM scripts") == [(10, 500)]
    assert [c for c in copies if c[1] == "scripts"] == [("whole", "scripts"), ("rows", "scripts")]


def test_a_widened_copy_catches_up_with_every_column_it_holds(tmp_path, copies):
    store = Store(tmp_path / "f.sqlite")
    store.insert_rows("scripts", {"script_id": list("abxyz"), "attempt": [1, 2, 0, 0, 0], "script": list("ABXYZ")})
    assert store.query("SELECT count(*) FROM scripts") == [(5,)]
    assert store.query("SELECT script FROM scripts ORDER BY 1 LIMIT 2") == [
        ("A",),
        ("B",),
    ]  # the bulky column joined on
    store.execute("UPDATE scripts SET script = 'A2' WHERE script_id = 'a'")
    store.insert_rows("scripts", {"script_id": ["c"], "attempt": [3], "script": ["C"]})
    assert store.query("SELECT script_id, attempt, script FROM scripts WHERE attempt > 0 ORDER BY 1") == [
        ("a", 1, "A2"), ("b", 2, "B"), ("c", 3, "C")
    ]  # fmt: skip
    assert copies[-1] == ("rows", "scripts")
