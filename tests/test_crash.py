"""Kill a batch with SIGKILL mid-run, run it again: nothing answered is asked
twice, nothing is duplicated, and the work completes."""

import os
import signal
import subprocess
import sys
import time

from factory.store import Store

N = 200


def smoke_command(base_url, run_dir):
    return [
        sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", str(N), "--model", "loopback",
        "--base-url", base_url, "--concurrency", "8", str(run_dir),
    ]  # fmt: skip


def test_sigkill_mid_batch_then_rerun(server, tmp_path):
    from loopback_server import Action

    server.default = Action(delay_s=0.1)  # 200 requests at concurrency 8: at least 2.5 s in all
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(smoke_command(server.base_url, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(server.requests) < 80 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.6)  # some answers come back (each is committed the moment it does)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]

    with Store.open(run_dir, read_only=True) as store:  # the killed store opens and reads
        saved = {h for (h,) in store.query("SELECT request_hash FROM llm_calls WHERE status = 'ok'")}
    assert 0 < len(saved) < N, "the kill should land mid-batch with some work saved"
    sent_before = len(server.requests)

    rerun = subprocess.run(smoke_command(server.base_url, run_dir), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-2000:]

    resent = set(server.hashes()[sent_before:])
    assert not (resent & saved), "a request already answered and saved was sent again"
    with Store.open(run_dir, read_only=True) as store:
        total, distinct, ok, attempts = store.query(
            "SELECT count(*), count(DISTINCT request_hash), count(*) FILTER (status = 'ok'), sum(attempts) "
            "FROM llm_calls"
        )[0]
        statuses = store.query("SELECT status FROM runs ORDER BY started_at")
    assert total == distinct == ok == N
    # The call log counts every attempt, those the kill cut off too. One is logged just before
    # it is sent, so one the kill caught in between is counted and never seen: at most the 8 in flight.
    assert len(server.requests) <= attempts <= len(server.requests) + 8
    assert statuses == [("interrupted",), ("done",)]  # the killed run is marked interrupted by the rerun
