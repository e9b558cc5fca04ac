"""The runs table tells how each run ended: done, failed, interrupted (Ctrl-C), or killed
(left `running`, then marked `interrupted` by the next process that opens the store for writing)."""

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from factory.run import open_run
from factory.store import Store

N = 400


def smoke_command(base_url, run_dir, n=N):
    return [sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", str(n), "--model", "loopback",
            "--base-url", base_url, "--concurrency", "4", str(run_dir)]  # fmt: skip


def start_smoke_mid_batch(server, run_dir, preexec_fn=None, **env):
    """A `factory smoke` subprocess, returned once it has sent 20 requests (of 400, 0.05 s each at 4 in flight)."""
    from loopback_server import Action

    server.default = Action(delay_s=0.05)
    proc = subprocess.Popen(smoke_command(server.base_url, run_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env}, preexec_fn=preexec_fn)  # fmt: skip
    deadline = time.monotonic() + 60
    while len(server.requests) < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    return proc


def run_rows(run_dir):
    with Store.open(run_dir, read_only=True) as store:
        return store.query("SELECT command, status, finished_at IS NOT NULL FROM runs ORDER BY started_at")


def test_ctrl_c_in_an_asyncio_batch_records_interrupted(server, tmp_path):
    proc = start_smoke_mid_batch(server, tmp_path / "run")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err == "interrupted: completed calls are saved; run the same command again to finish\n"
    assert run_rows(tmp_path / "run") == [("smoke", "interrupted", True)]


def ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job starts: Ctrl-C never reaches it


@pytest.mark.parametrize("sigint", ["handled", "ignored"])
def test_sigterm_stops_a_batch_as_ctrl_c_does_and_the_rerun_sends_only_the_rest(server, tmp_path, sigint):
    """A scheduler's kill (Slurm, Kubernetes) is SIGTERM: the run is interrupted, not left running, and every
    answer that came back is saved, also for a process started with SIGINT ignored."""
    run_dir = tmp_path / "run"
    proc = start_smoke_mid_batch(server, run_dir, preexec_fn=ignore_sigint if sigint == "ignored" else None)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err == "interrupted: completed calls are saved; run the same command again to finish\n"
    assert run_rows(run_dir) == [("smoke", "interrupted", True)]
    with Store.open(run_dir, read_only=True) as store:
        (saved,) = store.query("SELECT count(*) FROM llm_calls WHERE status = 'ok'")[0]
    assert 0 < saved < N
    from loopback_server import Action

    sent, server.default = len(server.requests), Action()  # the rest answered at once
    rerun = subprocess.run(smoke_command(server.base_url, run_dir), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert len(server.requests) - sent == N - saved  # nothing answered before the SIGTERM is asked again


def test_a_killed_run_is_marked_interrupted_when_the_store_is_next_opened_for_writing(server, tmp_path):
    run_dir = tmp_path / "run"
    proc = start_smoke_mid_batch(server, run_dir)
    proc.kill()
    proc.wait()
    assert run_rows(run_dir) == [("smoke", "running", False)]  # a reader changes nothing
    status = subprocess.run(
        [sys.executable, "-m", "factory.cli", "status", str(run_dir)], capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0 and "smoke: running when its process died" in status.stdout, status.stderr

    Store.open(run_dir).close()  # any writer: the run's lock file says the killed process is gone
    assert run_rows(run_dir) == [("smoke", "interrupted", False)]  # when it died is not known

    rerun = subprocess.run(smoke_command(server.base_url, run_dir, n=40), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert run_rows(run_dir) == [("smoke", "interrupted", False), ("smoke", "done", True)]


def test_a_second_writer_in_the_same_process_leaves_the_live_run_alone(tmp_path):
    with open_run(tmp_path, "first") as run:
        other = Store.open(tmp_path)  # DuckDB shares the file within one process
        other.close()
        assert run.store.query("SELECT status FROM runs") == [("running",)]
    assert run_rows(tmp_path) == [("first", "done", True)]


def test_keyboard_interrupt_and_cancellation_record_interrupted_and_other_errors_failed(tmp_path):
    with pytest.raises(KeyboardInterrupt), open_run(tmp_path, "sync"):
        raise KeyboardInterrupt

    async def cancelled():
        with open_run(tmp_path, "async"):
            asyncio.current_task().cancel()
            await asyncio.sleep(1)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
    with pytest.raises(ValueError), open_run(tmp_path, "broken"):
        raise ValueError("a bug")
    assert [row[:2] for row in run_rows(tmp_path)] == [
        ("sync", "interrupted"),
        ("async", "interrupted"),
        ("broken", "failed"),
    ]


def test_a_store_that_fails_at_the_end_does_not_hide_the_runs_own_error(tmp_path):
    from factory.errors import FactoryError

    with pytest.raises(FactoryError, match="^the disk is full$"), open_run(tmp_path, "broken") as run:
        run.store.db.close()  # stands in for a store that takes no more writes (full disk, damaged file)
        raise FactoryError("the disk is full")
    with (
        pytest.raises(FactoryError, match="^cannot record the end of run .* in .*factory.sqlite: "),
        open_run(tmp_path / "other", "fine") as run,
    ):
        run.store.db.close()


def tasks_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"question": "What is 6 * 7?", "answer": ["42"]}\n')
    return path


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens there


@pytest.mark.parametrize("command", ["refine", "coa"])
def test_a_run_whose_every_call_went_unanswered_is_failed_and_exits_non_zero(tmp_path, capsys, command):
    """An unreachable endpoint: the run is not `done` with nothing in it, and the failures stay in the log."""
    from factory.cli import main

    config = tmp_path / "run.yaml"
    config.write_text("llm: {max_retries: 0, timeout_s: 5}\n")
    run_dir = tmp_path / "run"
    url = f"http://127.0.0.1:{closed_port()}/v1"
    extra = ["--count", "1", "--scripts", "llm"] if command == "refine" else ["--tasks", str(tasks_file(tmp_path))]
    assert main([command, str(run_dir), "-c", str(config), "--model", "m", "--base-url", url, "-q", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: every LLM call of this run went unanswered (connection=") and err.count("\n") == 1, (
        err
    )
    assert err.endswith(f"see them with: factory calls {run_dir}\n")
    assert [row[:2] for row in run_rows(run_dir)] == [(command, "failed")]
    with Store.open(run_dir, read_only=True) as store:
        assert store.query("SELECT count(*) FROM llm_calls WHERE status <> 'ok'")[0][0] >= 1


def test_replies_that_came_but_did_not_fit_are_the_stage_s_outcome_not_a_failed_run(server, tmp_path):
    """Every call answered with a reply the schema refuses: the endpoint works, the stage counts them; smoke
    (which reports its calls itself) keeps its own exit status for errors."""
    from loopback_server import Action

    from factory.cli import main

    server.default = Action(content="not the JSON the schema asks for")
    run_dir = tmp_path / "run"
    argv = ["refine", str(run_dir), "--model", "m", "--base-url", server.base_url, "--count", "1", "-q"]
    assert main([*argv, "--scripts", "llm", "--no-code"]) == 0
    assert [row[:2] for row in run_rows(run_dir)] == [("refine", "done")]
