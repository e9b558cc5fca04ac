"""No paid answer lost when the disk fills up under a batch.

Each test mounts a real small tmpfs (root only; skipped otherwise), runs a real
command against the loopback server, fills the disk mid-batch, and checks: one
line, exit code 2, nothing sent after the failure was seen, and a rerun with the
space freed asks only what was never answered. "Mid-batch" holds under any load:
the server answers nothing from the 40th request on until the disk is full
(`hold_from`); on a busy machine the batch once finished all its requests before
the test had filled the disk (issue 28).
"""

import os
import subprocess
import sys
import textwrap
import threading

import pytest
from loopback_server import Action
from test_calllog_durability import wait_for

from factory.store import Store

N = 300


def smoke_command(base_url, run_dir, n=N):
    return [
        sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", str(n), "--model", "loopback",
        "--base-url", base_url, "--concurrency", "16", str(run_dir),
    ]  # fmt: skip


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def hold_from(server, n: int, content: str | None = None) -> threading.Event:
    """From the n-th request on, the server answers nothing until the returned event is set (its one loop
    waits in the reply: no request is read meanwhile), so a batch is held mid-way while the disk fills."""
    release, reply = threading.Event(), server.content
    server.default = Action(delay_s=0.1)

    def held(body):
        if len(server.requests) >= n:
            release.wait(120)
        return content if content is not None else reply(body)

    server.content = held
    return release


def fill_held(disk, release: threading.Event) -> "os.PathLike":
    """Fill the disk, then let the held batch go on: its next writes meet the full disk."""
    try:
        return fill(disk)
    finally:
        release.set()


def fill(disk) -> "os.PathLike":
    """Write a file until the filesystem is full; returns its path."""
    filler = disk / "filler"
    chunk = b"\0" * 2**20
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError:
            pass
    return filler


def test_full_disk_stops_the_batch_keeps_every_answer_and_the_rerun_asks_only_the_rest(server, small_disk):
    release = hold_from(server, 40)  # 300 requests at concurrency 16, 0.1 s each: about 2 s unheld
    run_dir = small_disk / "run"
    proc = subprocess.Popen(smoke_command(server.base_url, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: len(server.requests) >= 40, proc)
    filler = fill_held(small_disk, release)
    stderr = proc.communicate(timeout=120)[1].decode()
    first = server.hashes()

    lines = [line for line in stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: cannot write the call log to "), stderr[-3000:]
    assert "No space left on device" in lines[0] and "run the same command again" in lines[0]
    assert len(first) < N, "the batch should stop sending once the store cannot be written"

    filler.unlink()
    rerun = subprocess.run(smoke_command(server.base_url, run_dir), capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    again = server.hashes()[len(first) :]
    assert not set(again) & set(first), "a request answered before the disk filled was asked again"
    with Store.open(run_dir, read_only=True) as store:
        rows, ok, attempts = store.query(
            "SELECT count(*), count(*) FILTER (status = 'ok'), sum(attempts) FROM llm_calls"
        )[0]
    assert rows == ok == N
    assert attempts == len(server.requests)  # every request the server saw is counted once


def test_passrate_stops_on_a_full_disk_and_the_rerun_samples_only_the_rest(server, small_disk, tmp_path):
    """The pass-rate sampler lets the store failure end the command (it used to record it per slot)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(f'{{"id": "q{i}", "question": "Capital of France? #{i}", "answer": "Paris"}}\n' for i in range(40)),
        encoding="utf-8",
    )
    release = hold_from(server, 40, "<answer>Paris</answer>")
    command = [sys.executable, "-m", "factory.cli", "passrate", str(small_disk / "run"), "--tasks", str(tasks),
               "--model", "loopback", "--base-url", server.base_url, "-q", "--n", "8", "--concurrency", "16",
               "--no-retry-failures"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: len(server.requests) >= 40, proc)
    filler = fill_held(small_disk, release)
    stderr = proc.communicate(timeout=120)[1].decode()
    first = server.hashes()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "cannot write the call log" in lines[0], stderr[-3000:]
    assert len(first) < 320

    filler.unlink()
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert not set(server.hashes()[len(first) :]) & set(first)
    with Store.open(small_disk / "run", read_only=True) as store:
        assert store.query("SELECT count(*), count(*) FILTER (correct) FROM rollouts") == [(320, 320)]


AS_COMPLETED_BATCH = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {tests!r})
    from test_llm_faults import ask
    from factory.errors import FactoryError
    from factory.llm import LLMClient, LLMConfig
    from factory.store import Store

    async def main():  # refine and coa drive their items this way: one task each, awaited as they finish
        config = LLMConfig(model="loopback", base_url={url!r}, concurrency=16, timeout_s=30)
        async with LLMClient(config, Store({store!r})) as llm:
            async def item(i):
                await llm.run(ask(f"a{{i}} "))
                await llm.run(ask(f"b{{i}} "))
            for finished in asyncio.as_completed([asyncio.ensure_future(item(i)) for i in range(150)]):
                await finished

    try:
        asyncio.run(main())
    except FactoryError as exc:
        sys.exit(f"error: {{exc}}")
""")


def test_a_batch_of_item_tasks_ends_with_one_line_not_a_traceback_per_task(server, small_disk):
    release = hold_from(server, 40)
    script = AS_COMPLETED_BATCH.format(
        tests=os.path.dirname(__file__), url=server.base_url, store=str(small_disk / "s.sqlite")
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    wait_for(lambda: len(server.requests) >= 40, proc)
    fill_held(small_disk, release)
    stderr = proc.communicate(timeout=120)[1].decode()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, stderr[-3000:]  # sys.exit(message) exits 1
    assert lines[0].startswith("error: cannot write the call log to ")
    assert len(server.requests) < 300


def test_a_stage_write_the_full_disk_refuses_is_one_store_write_error(small_disk):
    """Not only the call log: any write to the store that the disk refuses (a stage saving its
    rows) is the one-line StoreWriteError that ends the batch, not DuckDB's traceback."""
    from factory.errors import StoreWriteError

    store = Store.open(small_disk / "run")
    fill(small_disk)
    big = {"request_hash": [f"k{i}" for i in range(20_000)], "response": ["x" * 2000] * 20_000}
    with pytest.raises(StoreWriteError) as caught:
        for _ in range(10):  # DuckDB buffers some writes: go on until the disk says no
            store.insert_rows("llm_calls", big, verb="INSERT OR REPLACE")
            store.execute("CHECKPOINT")
    message = str(caught.value)
    assert "\n" not in message and str(store.path) in message and "free space" in message
