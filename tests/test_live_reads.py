"""Reading a run while it writes its store: `factory calls`, `status` and `report`, a plain sqlite3 or
pandas session in another process; and two processes writing one store."""

import json
import sqlite3
import subprocess
import sys
import time

from factory.store import STORE_FILENAME, Store

ERROR_REPLY = '{"error": {"message": "this topic is refused", "type": "invalid_request_error"}}'


def factory_cli(*args):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=120)


def read_until(stream, text: str) -> str:
    """Lines from `stream` up to and including the first holding `text` (or all of them, to its end)."""
    lines = []
    while not lines or (text not in lines[-1] and lines[-1]):
        lines.append(stream.readline())
    return "".join(lines)


def smoke(server, run_dir, n, model="m"):
    command = [sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", str(n), "--model", model, "--base-url",
               server.base_url, "--concurrency", "4", str(run_dir)]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(run_dir.parent / f"{model}.err", "w"))


def start_slow_smoke(server, run_dir):
    """A `factory smoke` of 600 calls (0.3 s each, 4 in flight: 45 s or more until the test speeds the server up),
    one topic refused. Beside two CPU burners the looks before the watch took over 15 s: at 0.1 s a call the run
    had ended before the watch's first look."""
    from loopback_server import Action

    server.default = Action(delay_s=0.3)
    server.route("tracking a parcel", *[Action(status=400, body=ERROR_REPLY) for _ in range(100)])
    proc = smoke(server, run_dir, 600)
    deadline = time.monotonic() + 60
    while len(server.requests) < 40 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, (run_dir.parent / "m.err").read_text()[-2000:]
    return proc


def calls_now(run_dir) -> int:
    """Another process reads the live store with plain sqlite3 (as pandas, the sqlite3 CLI or any language does)."""
    script = (
        "import sqlite3, sys; db = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
        "print(db.execute('SELECT count(*) FROM llm_calls').fetchone()[0])"
    )
    out = subprocess.run([sys.executable, "-c", script, str(run_dir / STORE_FILENAME)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_readers_see_a_running_smoke_in_its_store(server, tmp_path):
    run_dir = tmp_path / "run"
    proc = start_slow_smoke(server, run_dir)
    try:
        first = factory_cli("calls", str(run_dir), "--json")
        assert first.returncode == 0, first.stderr
        live = json.loads(first.stdout)
        assert 0 < live["calls"] < 600 and live["pending"]["on_the_wire"] >= 1
        assert sum(live["errors"].values()) == live["calls"] - live["ok"]

        status = factory_cli("status", str(run_dir))
        assert status.returncode == 0 and status.stdout.startswith("a run is writing this store")
        assert " smoke: running (" in status.stdout and "on the wire now: " in status.stdout

        report = factory_cli("report", str(run_dir))  # the full report, of what the store holds now
        assert report.returncode == 0, report.stderr
        assert "smoke" in (run_dir / "report.html").read_text()

        seen = calls_now(run_dir)
        time.sleep(0.6)
        assert calls_now(run_dir) > seen  # progress shows between two looks
        import pandas as pd

        with sqlite3.connect(f"file:{run_dir / STORE_FILENAME}?mode=ro", uri=True) as db:
            frame = pd.read_sql("SELECT stage, status FROM llm_calls", db)
        assert set(frame["stage"]) == {"smoke"} and len(frame) >= seen

        assert proc.poll() is None, "the run should still be going"
        from loopback_server import Action

        watch = subprocess.Popen([sys.executable, "-m", "factory.cli", "status", str(run_dir), "--watch", "0.5"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        first_line = watch.stdout.readline()  # the watch has shown the live run once
        server.default = Action(delay_s=0.005)  # now let the run finish while the watch follows it
        watched, watch_err = watch.communicate(timeout=120)
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 1  # the refused topic's calls failed, as a plain run reports
    assert watch.returncode == 0, watch_err
    assert first_line == "a run is writing this store; its latest runs:\n"
    final = [block.strip() for block in watched.split("\n\n") if block.strip()][-1]
    assert final.startswith("its latest runs:\n") and " smoke: done (" in final
    summary = json.loads(factory_cli("calls", str(run_dir), "--json").stdout)
    assert summary["calls"] == 600 and summary["pending"] is None


def test_two_processes_write_one_store_and_every_row_is_there_once(server, tmp_path):
    from loopback_server import Action

    server.default = Action(delay_s=0.01)
    run_dir = tmp_path / "run"
    procs = [smoke(server, run_dir, 60, model) for model in ("m1", "m2")]
    for proc, model in zip(procs, ("m1", "m2")):
        assert proc.wait(timeout=180) == 0, (tmp_path / f"{model}.err").read_text()[-2000:]
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT model, count(*), count(DISTINCT request_hash) FROM llm_calls GROUP BY 1 ORDER BY 1") == [
            ("m1", 60, 60), ("m2", 60, 60)
        ]  # fmt: skip
        assert store.query("SELECT sum(attempts) FROM llm_calls") == [(len(server.requests),)] == [(120,)]
        assert store.query("SELECT status, count(*) FROM runs GROUP BY 1") == [("done", 2)]


def test_a_running_run_is_not_called_dead_by_a_second_writer(server, tmp_path):
    """Another writer opening the store while a run goes must not mark it interrupted: the run holds its lock."""
    run_dir = tmp_path / "run"
    proc = start_slow_smoke(server, run_dir)
    try:
        Store.open(run_dir).close()  # a writer open: marks dead runs
        with Store.open(run_dir, read_only=True) as store:
            assert store.query("SELECT status FROM runs") == [("running",)]
    finally:
        proc.kill()
        proc.wait()
    Store.open(run_dir).close()
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT status FROM runs") == [("interrupted",)]
