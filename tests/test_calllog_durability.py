"""No paid answer lost, no attempt uncounted, when the process is killed mid-batch.

The tests run the client in a child process that SIGKILLs itself once some answers are in: each
answer is committed when it comes back, each attempt just before it is sent (llm_pending).
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from loopback_server import Action

from factory.llm.calllog import CallLog
from factory.store import Store


def wait_for(condition, proc, timeout_s=60):
    import time

    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)


KILLED_CLIENT = textwrap.dedent("""
    import asyncio, os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_llm_faults import ask
    from factory.llm import LLMClient, LLMConfig
    from factory.store import Store

    async def main():
        config = LLMConfig(model="loopback", base_url={url!r}, concurrency=8, timeout_s=30, max_retries=0)
        llm = LLMClient(config, Store({store!r}), run_id="killed")
        await llm.start()
        tasks = [asyncio.ensure_future(llm.run(ask(f"q{{i}} "))) for i in range({n})]
        tasks += [asyncio.ensure_future(llm.run(ask("slow")))]
        for task in tasks[:-1]:
            await task
        while {wait_slow} and not os.path.exists({marker!r}):
            await asyncio.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
""")


def run_killed_client(server, tmp_path, n, wait_slow=False, store_name="s.sqlite"):
    """A client that SIGKILLs itself once n answers are in (and, with wait_slow, the slow request is sent)."""
    marker = tmp_path / "slow-sent"
    script = KILLED_CLIENT.format(tests=os.path.dirname(__file__), url=server.base_url,
                                  store=str(tmp_path / store_name), n=n, wait_slow=wait_slow, marker=str(marker))  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    if wait_slow:
        wait_for(lambda: any("slow" in str(r["body"]["messages"]) for r in server.requests), proc)
        marker.touch()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-3000:]


def test_answers_in_before_a_kill_are_kept_and_not_asked_again(server, fast_config, tmp_path):
    server.route("slow", Action(delay_s=3))  # still on the wire at the kill
    run_killed_client(server, tmp_path, 20)
    store = Store(tmp_path / "s.sqlite")
    assert store.query("SELECT count(*) FROM llm_calls WHERE status = 'ok'") == [(20,)]  # committed as they came

    from test_cache_and_log import run
    from test_llm_faults import ask

    sent = len(server.requests)
    results = run(fast_config(), [ask(f"q{i} ") for i in range(20)], store)
    assert all(r.ok and r.cached for r in results) and len(server.requests) == sent


def test_an_attempt_killed_on_the_wire_is_counted_and_its_rerun_adds_to_it(server, fast_config, tmp_path):
    server.route("slow", Action(delay_s=3))  # still on the wire at the kill
    run_killed_client(server, tmp_path, 3, wait_slow=True)
    store = Store(tmp_path / "s.sqlite")
    assert store.query("SELECT attempts FROM llm_pending") == [(1,)]  # sent, never answered
    assert CallLog(store).lost_attempts == 1  # the next client counts it
    assert store.query("SELECT count(*) FROM llm_pending") == [(0,)]
    rows = store.query("SELECT status, error_kind, attempts, stage FROM llm_calls WHERE messages LIKE '%slow%'")
    assert rows == [("error", "interrupted", 1, "t")]

    from test_cache_and_log import run
    from test_llm_faults import ask

    [result] = run(fast_config(), [ask("slow")], store)  # the route is used up: answered at once now
    assert result.ok and not result.cached
    rows = store.query("SELECT status, attempts FROM llm_calls WHERE messages LIKE '%slow%'")
    assert rows == [("ok", 2)]
    assert store.query("SELECT sum(attempts) FROM llm_calls") == [(len(server.requests),)]


def test_clients_on_one_store_share_its_call_log(server, fast_config, tmp_path):
    import asyncio

    from test_llm_faults import ask

    from factory.llm import LLMClient

    store = Store(tmp_path / "s.sqlite")

    async def go():
        async with LLMClient(fast_config(), store) as one, LLMClient(fast_config(model="other"), store) as two:
            assert one.log is two.log  # one cache and spend figure, one failure that stops both
            return await asyncio.gather(one.run(ask("a")), two.run(ask("b")))

    assert all(r.ok for r in asyncio.run(go()))
    assert store.query("SELECT count(*) FROM llm_calls") == [(2,)]
    assert store.query("SELECT count(*) FROM llm_pending") == [(0,)]  # closed clean: nothing left on the wire


def test_a_batch_ending_on_an_error_keeps_the_answers_on_the_wire_and_sends_nothing_new(server, fast_config, tmp_path):
    """E.g. a stage's own store write fails: the client waits for what it paid for, starts nothing new."""
    import asyncio

    from test_llm_faults import ask

    from factory.llm import LLMClient

    server.default = Action(delay_s=0.3)
    store = Store(tmp_path / "s.sqlite")

    async def go():
        async with LLMClient(fast_config(concurrency=4), store) as llm:
            calls = [asyncio.ensure_future(llm.run(ask(f"w{i} "))) for i in range(12)]  # noqa: F841 (left running)
            while len(server.requests) < 4:
                await asyncio.sleep(0.01)
            raise RuntimeError("a stage's bug")

    with pytest.raises(RuntimeError):
        asyncio.run(go())
    assert len(server.requests) == 4  # the 8 waiting for a slot were never sent
    assert store.query("SELECT status, count(*) FROM llm_calls GROUP BY 1") == [("ok", 4)]


@pytest.mark.parametrize(
    "fixed", ["{not json", "[1, 2]", '"x"', '{"started_at": "not a date", "sample_index": "x"}', None]
)
def test_a_damaged_pending_row_is_still_counted_never_a_traceback(tmp_path, fixed):
    """A row of llm_pending written by hand or by another version: its attempts still count."""
    store = Store.open(tmp_path / "run")
    store.execute("INSERT INTO llm_pending VALUES ('k1', 'gone-run', ?, 2, NULL)", [fixed])
    assert CallLog(store).lost_attempts == 2
    assert store.query("SELECT status, error_kind, attempts FROM llm_calls WHERE request_hash = 'k1'") == [
        ("error", "interrupted", 2)
    ]
    store.close()


def test_an_attempt_is_logged_when_its_request_leaves_not_before(server, tmp_path, monkeypatch):
    """The log counts an attempt once its headers are on the wire, so a request that never
    left (no connection) is not counted as one the provider saw, and one that left always is."""
    import asyncio
    import socket

    from test_llm_faults import ask

    from factory.llm import LLMClient, LLMConfig

    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"

    logged = []
    attempt = CallLog.attempt
    monkeypatch.setattr(CallLog, "attempt", lambda log, key, n: (logged.append(key), attempt(log, key, n))[1])

    def tries(url):
        logged.clear()

        async def go():
            config = LLMConfig(model="loopback", base_url=url, max_retries=0, timeout_s=10)
            store = Store(tmp_path / f"{len(list(tmp_path.iterdir()))}.sqlite")
            llm = LLMClient(config, store, run_id="t")
            await llm.start()
            result = await llm.run(ask("q "))
            await llm.close()
            return result, len(logged)

        return asyncio.run(go())

    refused, refused_tries = tries(dead_url)
    assert refused.error_kind == "connection" and refused.attempts == 1 and refused_tries == 0
    answered, answered_tries = tries(server.base_url)
    assert answered.ok and answered_tries == 1 == len(server.requests)


def test_factory_calls_on_a_killed_run_says_what_it_left_on_the_wire(server, tmp_path, capsys):
    """Read-only readers do not settle a dead run's calls (the next command's LLM client does), so they say what waits."""
    from factory.cli import main

    server.route("slow", Action(delay_s=3))
    run_killed_client(server, tmp_path, 5, wait_slow=True, store_name="factory.sqlite")
    assert main(["calls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "calls: 5 (5 ok)" in out
    assert "left on the wire by a killed run, not yet counted above" in out and "1 calls, 1 attempts" in out
    store = Store(tmp_path / "factory.sqlite")
    CallLog(store)  # the next command's LLM client settles it
    store.close()
    assert main(["calls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "calls: 6 (5 ok)" in out and "left on the wire" not in out
