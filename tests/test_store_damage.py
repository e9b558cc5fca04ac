"""A damaged store or a run folder that cannot be made: one line that names the file and what to do,
and nothing is written into a damaged file."""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

import factory
from factory.errors import FactoryError
from factory.store import Store
from factory.store.errors import StoreDamagedError

READERS = [["calls"], ["report"], ["status"]]


def factory_cli(*args):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=120)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def smoke_store(server, tmp_path):
    """A run folder that a real smoke run filled (300 calls) and closed cleanly."""
    config = factory.FactoryConfig(run_dir=tmp_path / "run")
    config.llm.model, config.llm.base_url, config.llm.concurrency = "m", server.base_url, 16
    config.smoke.n = 300
    assert all(r.ok for r in factory.run_smoke(config, progress=False).results)
    return tmp_path / "run" / "factory.sqlite"


def damage(path, how):
    size = path.stat().st_size
    with open(path, "r+b") as f:
        if how == "truncated to half":
            f.truncate(size // 2)
        else:  # random bytes over the middle half, in place: the clean-close stamp no longer matches
            f.seek(size // 4)
            f.write(os.urandom(size // 2))


def assert_damage_line(result, path):
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"error: run store {path} is damaged ("), result.stderr
    assert f"move it aside (mv {path} {path}.damaged)" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("how", ["truncated to half", "random bytes in the middle"])
@pytest.mark.parametrize("command", READERS + [["smoke"]], ids=lambda c: c[0])
def test_a_damaged_store_is_one_line_and_never_written(how, command, smoke_store, server):
    damage(smoke_store, how)
    before, sent = digest(smoke_store), len(server.requests)
    run_dir = str(smoke_store.parent)
    if command == ["smoke"]:
        args = ["smoke", "-q", "-n", "300", "--model", "m", "--base-url", server.base_url, run_dir]
    else:
        args = [*command, run_dir]
    assert_damage_line(factory_cli(*args), smoke_store)
    assert digest(smoke_store) == before and len(server.requests) == sent  # not written, nothing sent
    wal = smoke_store.parent / "factory.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # nothing waits to be written into it either


def test_damage_met_mid_query_is_the_same_error(smoke_store):
    with Store(smoke_store, read_only=True) as store:  # a reader opens without a check
        damage(smoke_store, "random bytes in the middle")  # under a reader that has not read the data yet
        with pytest.raises(StoreDamagedError, match="is damaged .*move it aside"):
            store.query("SELECT * FROM llm_calls")
    with pytest.raises(StoreDamagedError, match="is damaged"):
        Store(smoke_store)  # a writer: the file no longer matches its clean-close stamp, so it is checked


def test_a_clean_store_is_written_as_before(smoke_store):
    with Store(smoke_store) as store:  # the clean-close stamp matches: opened without a check
        store.execute("INSERT INTO runs (run_id, status) VALUES ('x', 'done')")
    with Store(smoke_store) as store:
        assert store.query("SELECT count(*) FROM llm_calls") == [(300,)]
        assert store.query("SELECT count(*) FROM runs WHERE run_id = 'x'") == [(1,)]


def test_a_file_in_the_way_of_the_run_folder(tmp_path):
    blocker = tmp_path / "run"
    blocker.write_text("not a folder")
    result = factory_cli("smoke", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", str(blocker))
    expected = f"error: cannot create run folder {blocker}: a file is in the way\n"
    assert (result.returncode, result.stderr) == (2, expected)
    below = blocker / "sub"
    result = factory_cli("smoke", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", str(below))
    assert (result.returncode, result.stderr) == (2, f"error: cannot create run folder {below}: Not a directory\n")


@pytest.fixture
def immutable_dir(tmp_path):
    """A folder nothing can be created in, even by root (chattr +i); skipped where chattr is not available."""
    parent = tmp_path / "locked"
    parent.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(parent)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here (not root, or a filesystem without the immutable flag)")
    yield parent
    subprocess.run(["chattr", "-i", str(parent)], check=True)


def test_a_run_folder_under_a_read_only_parent(immutable_dir):
    run_dir = immutable_dir / "run"
    result = factory_cli("smoke", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", str(run_dir))
    expected = f"error: cannot create run folder {run_dir}: Operation not permitted\n"
    assert (result.returncode, result.stderr) == (2, expected)
    with pytest.raises(FactoryError, match="cannot create run folder"):
        Store.open(run_dir)
