"""Copies saved as Parquet bases (store/bases.py): another process starts from the base instead of
copying the table again, what it reads is what the file holds, and a base never outlives its truth."""

import subprocess
import sys

import pytest

from factory.store import Store
from factory.store import reader as reader_module

ROWS = 300


@pytest.fixture(autouse=True)
def small_bases(monkeypatch):
    monkeypatch.setattr(reader_module, "BASE_MIN_ROWS", 100)


def fill(store: Store, start: int = 0, n: int = ROWS) -> None:
    ids = [f"t{i:05d}" for i in range(start, start + n)]
    store.insert_rows("trajectories", {"trajectory_id": ids, "source": ["refine"] * n, "verified": [True] * n, "n_turns": list(range(n)),
                                       "conversations": [f"text {i}" for i in ids],
                                       "tool_inputs": [["a", i] for i in ids]})  # fmt: skip


def bases(folder) -> list[str]:
    return sorted(p.name for p in (folder / "copies").glob("*-trajectories-*.parquet"))


def seen(store: Store) -> list[tuple]:
    return store.query("SELECT trajectory_id, n_turns, conversations, tool_inputs FROM trajectories ORDER BY 1")


def in_file(store: Store) -> list[tuple]:
    rows = store.lookup("SELECT trajectory_id, n_turns, conversations, tool_inputs FROM trajectories ORDER BY 1")
    import json

    return [(t, n, c, json.loads(i) if i else None) for t, n, c, i in rows]


# Another process: reads the store with bases from 100 rows up, and says how many whole copies it took.
READER = """
import sys, json
from factory.store import Store, reader, copies
reader.BASE_MIN_ROWS = 100
taken = []
real = copies.copy_rows
reader.copy_rows = lambda db, duck, table, *a, **k: (taken.append(table), real(db, duck, table, *a, **k))[1]
store = Store(sys.argv[1], read_only=True)
rows = store.query("SELECT trajectory_id, n_turns, conversations, tool_inputs FROM trajectories ORDER BY 1")
print(json.dumps({"rows": [list(r) for r in rows], "whole_copies": taken}))
"""


def read_elsewhere(path) -> dict:
    import json

    done = subprocess.run([sys.executable, "-c", READER, str(path)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_another_process_starts_from_the_base_and_catches_up(tmp_path):
    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    assert len(seen(store)) == ROWS and len(bases(tmp_path)) == 1
    store.execute("UPDATE trajectories SET conversations = 'edited' WHERE n_turns < 5")
    store.execute("DELETE FROM trajectories WHERE n_turns >= 290")
    fill(store, start=ROWS, n=20)
    other = read_elsewhere(tmp_path / "factory.sqlite")
    assert [tuple(r) for r in other["rows"]] == in_file(store) == seen(store)
    assert other["whole_copies"] == []  # the base and 5 + 10 + 20 rows from SQLite
    assert len(in_file(store)) == ROWS - 10 + 20


def test_many_changes_save_a_new_base_and_a_reader_of_the_old_one_starts_again(tmp_path):
    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    seen(store)
    first = bases(tmp_path)
    writer = Store(tmp_path / "factory.sqlite")
    writer.execute("UPDATE trajectories SET n_turns = n_turns + 1000")  # every row: the base is not worth it
    assert seen(writer) == in_file(writer)
    second = bases(tmp_path)
    assert len(second) == 1 and second != first  # the old base deleted
    assert seen(store) == in_file(store)  # the first store catches up from the new base
    writer.execute("UPDATE trajectories SET n_turns = -1 WHERE n_turns = 1000")
    assert store.query("SELECT count(*) FROM trajectories WHERE n_turns = -1") == [(1,)]


def test_a_reader_whose_base_was_deleted_runs_its_query_again(tmp_path):
    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    seen(store)
    for path in (tmp_path / "copies").glob("*.parquet"):
        path.unlink()  # as a process that saved a newer base does
    store.reader.data_version = None  # as another process's commit does
    assert seen(store) == in_file(store)


def test_filters_with_host_files_shut_read_the_base(tmp_path):
    from factory.filters import parse_filters, run_filters

    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    config = parse_filters([{"name": "long", "kind": "sql", "sql": "n_turns >= 100"}], "test")
    funnel = run_filters(store, config=config)
    assert funnel.kept == ROWS - 100 and len(bases(tmp_path)) == 1
    with pytest.raises(Exception, match="(?i)permission|disabled|external"):
        store.query("SELECT * FROM read_text('/etc/hostname')")


def test_no_base_inside_a_write_transaction_or_where_the_folder_takes_no_file(tmp_path):
    store = Store(tmp_path / "a" / "factory.sqlite")
    fill(store)
    with pytest.raises(RuntimeError), store.transaction() as con:
        con.execute("DELETE FROM trajectories WHERE n_turns < 100")
        assert len(seen(store)) == ROWS - 100  # read inside: may be rolled back, so not saved
        raise RuntimeError("undo")
    assert bases(tmp_path / "a") == []
    assert len(seen(store)) == ROWS and len(bases(tmp_path / "a")) == 1
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "copies").write_text("a file where the folder would go")
    other = Store(tmp_path / "b" / "factory.sqlite")
    fill(other)
    assert seen(other) == in_file(other)  # held in memory


def test_a_new_store_in_the_folder_never_reads_the_old_one_s_base(tmp_path):
    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    seen(store)
    store.close()
    for name in ("factory.sqlite", "factory.sqlite-wal", "factory.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    new = Store(tmp_path / "factory.sqlite")
    fill(new, start=5000)  # the same row count, rowids and change log as the old store had
    assert seen(new) == in_file(new) and seen(new)[0][0] == "t05000"


def test_no_base_when_the_disk_would_keep_less_than_twice_the_store_free(tmp_path, monkeypatch):
    monkeypatch.setattr("factory.store.bases.ROOM_MARGIN", 2**62)  # as a nearly full disk
    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    assert seen(store) == in_file(store) and bases(tmp_path) == []


def test_saving_a_base_deletes_older_ones_only(tmp_path):
    """Two processes may save bases of one table at once: the one that finishes last keeps the newer."""
    from factory.store.bases import find_base, store_id, write_base
    from factory.store.changes import Mark

    store = Store(tmp_path / "factory.sqlite")
    fill(store)
    columns = store.reader._table_columns("trajectories")
    owner, folder = store_id(store.db), tmp_path / "copies"
    newer = write_base(store.db, folder, owner, "trajectories", columns, Mark(7, ROWS, ROWS))
    write_base(store.db, folder, owner, "trajectories", columns, Mark(3, ROWS, ROWS))  # finished later
    assert newer.path.exists() and len(bases(tmp_path)) == 2
    assert find_base(folder, owner, "trajectories", columns) == newer
    newest = write_base(store.db, folder, owner, "trajectories", columns, Mark(9, ROWS, ROWS))
    assert bases(tmp_path) == [newest.path.name]
