"""Reading a run while it writes its store: `factory calls`, `report` and `status` show the run's
live snapshot, labelled with its age; a snapshot that cannot be written never stops the run."""

import json
import logging
import os
import subprocess
import sys
import time

import factory
from factory.store import Store
from factory.store.live import STATUS_FILENAME

ERROR_REPLY = '{"error": {"message": "this topic is refused", "type": "invalid_request_error"}}'


def factory_cli(*args):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=120)


def read_until(stream, text: str) -> str:
    """Lines from `stream` up to and including the first holding `text` (or all of them, to its end)."""
    lines = []
    while not lines or (text not in lines[-1] and lines[-1]):
        lines.append(stream.readline())
    return "".join(lines)


def start_slow_smoke(server, run_dir):
    """A `factory smoke` of 600 calls (0.1 s each, 4 in flight: 15 s or more until the test speeds the server up),
    one topic refused; snapshots every 0.2 s."""
    from loopback_server import Action

    server.default = Action(delay_s=0.1)
    server.route("tracking a parcel", *[Action(status=400, body=ERROR_REPLY) for _ in range(100)])
    command = [sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", "600", "--model", "m", "--base-url",
               server.base_url, "--concurrency", "4", str(run_dir)]  # fmt: skip
    env = {**os.environ, "FACTORY_STATUS_INTERVAL_S": "0.2"}
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(run_dir.parent / "smoke.err", "w"), env=env)
    deadline = time.monotonic() + 60
    while len(server.requests) < 40 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)  # a snapshot or two past the first answers
    assert proc.poll() is None, (run_dir.parent / "smoke.err").read_text()[-2000:]
    return proc


def test_readers_see_a_running_smoke_through_its_live_snapshot(server, tmp_path):
    run_dir = tmp_path / "run"
    started = time.monotonic()
    proc = start_slow_smoke(server, run_dir)
    try:
        first = factory_cli("calls", str(run_dir), "--json")
        assert first.returncode == 0, first.stderr
        live = json.loads(first.stdout)
        assert live["live"]["status"] == "running" and live["live"]["command"] == "smoke"
        assert live["live"]["pid"] == proc.pid
        assert live["live"]["age_s"] < time.monotonic() - started  # written by this run, however busy the machine
        assert 0 < live["calls"] < 600 and live["live"]["rows_added"]["llm_calls"] == live["calls"]
        mine = live["live"]["this_run"]
        assert mine["calls"] == live["calls"] and sum(mine["errors"].values()) == live["calls"] - live["ok"] > 0
        (kind,) = mine["errors"]
        assert live["live"]["last_error"]["kind"] == kind and live["live"]["last_error"]["stage"] == "smoke"

        text = factory_cli("calls", str(run_dir))
        assert text.returncode == 0 and text.stdout.startswith("live snapshot of run ")
        assert ": running, elapsed " in text.stdout.splitlines()[0] and "s old" in text.stdout.splitlines()[0]

        report = factory_cli("report", str(run_dir))
        assert report.returncode == 0 and "(a live snapshot, not the full report" in report.stdout, report.stderr
        assert "Live snapshot, not the full report" in (run_dir / "report.html").read_text()

        time.sleep(0.6)
        later = json.loads(factory_cli("calls", str(run_dir), "--json").stdout)
        assert later["calls"] > live["calls"]  # progress shows between two looks

        assert proc.poll() is None, "the run should still be going"
        from loopback_server import Action

        watch = subprocess.Popen([sys.executable, "-m", "factory.cli", "status", str(run_dir), "--watch", "0.5"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        first_line = watch.stdout.readline()  # the watch has shown the live run once
        followed = read_until(watch.stdout, "this run: ")  # and its own calls (a busy machine is slow to show them)
        server.default = Action(delay_s=0.005)  # now let the run finish while the watch follows it
        watched, watch_err = watch.communicate(timeout=120)
        watched = followed + watched
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 1  # the refused topic's calls failed, as a plain run reports
    assert watch.returncode == 0, watch_err
    assert first_line.startswith("live snapshot of run ") and ": running, elapsed " in first_line
    assert "this run: " in watched
    final = watched.split("no run is writing this store; its latest runs:\n")[1]
    assert final.split("\n", 1)[0].endswith(")") and " smoke: done (" in final
    after = factory_cli("calls", str(run_dir), "--json")
    summary = json.loads(after.stdout)
    assert "live" not in summary and summary["calls"] == 600  # the store itself, once the run is over
    snapshot = json.loads((run_dir / STATUS_FILENAME).read_text())
    assert snapshot["status"] == "done" and snapshot["this_run"]["calls"] == 600


def test_a_store_held_by_a_writer_without_a_snapshot_is_one_line(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", f"from factory.store import Store; s = Store(r'{tmp_path / 'factory.duckdb'}'); "
                               "print('open', flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline() == "open\n"
        result = factory_cli("calls", str(tmp_path))
    finally:
        holder.communicate("\n", timeout=60)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: cannot open run store {tmp_path / 'factory.duckdb'}: it is in use")
    assert "publishes no live status" in result.stderr


def test_a_finished_run_still_closing_its_store_shows_its_last_snapshot(server, tmp_path):
    """Between a run's last snapshot ("done") and the lock going, a reader shows that snapshot, not an error."""
    run_dir = tmp_path / "run"
    script = (
        "import factory; from factory.store import Store\n"
        f"config = factory.FactoryConfig(run_dir=r'{run_dir}')\n"
        f"config.llm.model, config.llm.base_url, config.smoke.n = 'm', '{server.base_url}', 3\n"
        "factory.run_smoke(config, progress=False)\n"
        f"store = Store(r'{run_dir / 'factory.duckdb'}')\n"  # the same process holds the lock again, as if closing
        "print('holding', flush=True); input()\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        result = factory_cli("calls", str(run_dir), "--json")
    finally:
        holder.communicate("\n", timeout=60)
    assert result.returncode == 0, result.stderr
    live = json.loads(result.stdout)
    assert live["live"]["status"] == "done" and live["live"]["pid"] == holder.pid and live["calls"] == 3


def test_a_snapshot_that_cannot_be_written_never_stops_the_run(server, tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("FACTORY_STATUS_INTERVAL_S", "0.01")
    (tmp_path / "run" / STATUS_FILENAME).mkdir(parents=True)  # a folder in the way: every replace fails
    config = factory.FactoryConfig(run_dir=tmp_path / "run")
    config.llm.model, config.llm.base_url = "m", server.base_url
    config.smoke.n = 40
    with caplog.at_level(logging.WARNING, logger="factory.store.live"):
        outcome = factory.run_smoke(config, progress=False)
    assert all(r.ok for r in outcome.results)
    with Store.open(tmp_path / "run", read_only=True) as store:
        assert store.query("SELECT status FROM runs") == [("done",)]
    warnings = [r.getMessage() for r in caplog.records if r.name == "factory.store.live"]
    assert len(warnings) == 1 and "live status" in warnings[0] and "not updated" in warnings[0]
