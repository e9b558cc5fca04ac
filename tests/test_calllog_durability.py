"""No paid answer lost, no attempt uncounted, when the process is killed between flushes.

The tests run the client in a child process that SIGKILLs itself before the
call log's flush, so only the call journal can have kept its answers.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from loopback_server import Action

from factory.llm.calllog import CallLog
from factory.llm.journal import journal_lines, journal_path
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
    import factory.llm.journal as journal, factory.llm.keeper as keeper
    from factory.llm import LLMClient, LLMConfig
    from factory.store import Store

    keeper.FLUSH_EVERY_S = {flush_every_s}
    journal.ROTATE_BYTES = {rotate_bytes}

    async def main():
        config = LLMConfig(model="loopback", base_url={url!r}, concurrency=8, timeout_s=30, max_retries=0)
        llm = LLMClient(config, Store({store!r}), run_id="killed")
        await llm.start()
        tasks = [asyncio.ensure_future(llm.run(ask(f"q{{i}} "))) for i in range({n})]
        tasks += [asyncio.ensure_future(llm.run(ask("slow")))]
        for task in tasks[:-1]:
            await task
            await asyncio.sleep({pause_s})
        while {wait_slow} and not os.path.exists({marker!r}):
            await asyncio.sleep(0.01)
        journal_file, waited = journal.journal_path(__import__("pathlib").Path({store!r})), 0
        while {settle_bytes} and sum(map(len, journal.journal_lines(journal_file))) >= {settle_bytes} and waited < 1000:
            await asyncio.sleep(0.01)  # a busy machine may flush late: let one rotation land first
            waited += 1
        while {wait_flushed} and llm.keeper.log.backlog and waited < 1000:
            await asyncio.sleep(0.01)  # the same: let the answers reach DuckDB before the kill
            waited += 1
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
""")


def run_killed_client(server, tmp_path, n, wait_slow=False, flush_every_s=3600, rotate_bytes=2**30, pause_s=0,
                      store_name="s.duckdb", settle_bytes=0, wait_flushed=False):  # fmt: skip
    """A client that SIGKILLs itself once n answers are in (and, with wait_slow, the slow request is sent).
    By default it never flushes (only the journal can keep the answers) and never rotates its journal."""
    marker = tmp_path / "slow-sent"
    script = KILLED_CLIENT.format(tests=os.path.dirname(__file__), url=server.base_url,
                                  store=str(tmp_path / store_name), n=n, wait_slow=wait_slow, marker=str(marker), flush_every_s=flush_every_s,
                                  rotate_bytes=rotate_bytes, pause_s=pause_s, settle_bytes=settle_bytes,
                                  wait_flushed=wait_flushed)  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    if wait_slow:
        wait_for(lambda: any("slow" in str(r["body"]["messages"]) for r in server.requests), proc)
        marker.touch()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-3000:]


def test_answers_killed_before_any_flush_are_not_asked_again(server, fast_config, tmp_path):
    server.route("slow", Action(delay_s=3))  # still on the wire at the kill
    run_killed_client(server, tmp_path, 20)
    store = Store(tmp_path / "s.duckdb")
    assert store.query("SELECT count(*) FROM llm_calls") == [(0,)]  # nothing had reached DuckDB
    log = CallLog(store)  # opening replays the journal
    assert log.replayed.answered == 20
    assert store.query("SELECT count(*) FROM llm_calls WHERE status = 'ok'") == [(20,)]
    log.close()
    assert journal_path(store.path).stat().st_size == 0

    from test_cache_and_log import run
    from test_llm_faults import ask

    sent = len(server.requests)
    results = run(fast_config(), [ask(f"q{i} ") for i in range(20)], store)
    assert all(r.ok and r.cached for r in results) and len(server.requests) == sent


def test_an_attempt_killed_on_the_wire_is_counted_and_its_rerun_adds_to_it(server, fast_config, tmp_path):
    server.route("slow", Action(delay_s=3))  # still on the wire at the kill
    run_killed_client(server, tmp_path, 3, wait_slow=True)
    store = Store(tmp_path / "s.duckdb")
    CallLog(store).close()
    rows = store.query("SELECT status, error_kind, attempts, stage FROM llm_calls WHERE messages LIKE '%slow%'")
    assert rows == [("error", "interrupted", 1, "t")]

    from test_cache_and_log import run
    from test_llm_faults import ask

    [result] = run(fast_config(), [ask("slow")], store)  # the route is used up: answered at once now
    assert result.ok and not result.cached
    rows = store.query("SELECT status, attempts FROM llm_calls WHERE messages LIKE '%slow%'")
    assert rows == [("ok", 2)]
    assert store.query("SELECT sum(attempts) FROM llm_calls") == [(len(server.requests),)]


def test_a_rotated_journal_still_holds_what_duckdb_lacks(server, tmp_path):
    """Flushes every 10 ms and a journal rewritten past 2 KB: the kill still loses nothing."""
    server.route("slow", Action(delay_s=3))
    run_killed_client(server, tmp_path, 60, wait_slow=True, flush_every_s=0.01, rotate_bytes=2048, pause_s=0.005,
                      settle_bytes=60 * 1000)  # fmt: skip
    written = sum(len(line) for line in journal_lines(journal_path(tmp_path / "s.duckdb")))
    assert written < 60 * 1000  # rotated: not every call's lines are still there
    store = Store(tmp_path / "s.duckdb")
    CallLog(store).close()
    rows = dict(store.query("SELECT status, count(*) FROM llm_calls GROUP BY 1"))
    assert rows == {"ok": 60, "error": 1}
    assert store.query("SELECT sum(attempts) FROM llm_calls") == [(len(server.requests),)]


def test_clients_on_one_store_share_its_call_log(server, fast_config, tmp_path):
    import asyncio

    from test_llm_faults import ask

    from factory.llm import LLMClient

    store = Store(tmp_path / "s.duckdb")

    async def go():
        async with LLMClient(fast_config(), store) as one, LLMClient(fast_config(model="other"), store) as two:
            assert one.log is two.log  # one journal file: a second client must not replay or empty the first's
            return await asyncio.gather(one.run(ask("a")), two.run(ask("b")))

    assert all(r.ok for r in asyncio.run(go()))
    assert store.query("SELECT count(*) FROM llm_calls") == [(2,)]
    assert journal_path(store.path).stat().st_size == 0  # closed clean: nothing left to replay


def test_a_batch_ending_on_an_error_keeps_the_answers_on_the_wire_and_sends_nothing_new(server, fast_config, tmp_path):
    """E.g. a stage's own store write fails: the client waits for what it paid for, starts nothing new."""
    import asyncio

    from test_llm_faults import ask

    from factory.llm import LLMClient

    server.default = Action(delay_s=0.3)
    store = Store(tmp_path / "s.duckdb")

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
    "damage",
    [
        b"\xff garbage \x93 {not json\n" * 50,  # (a NUL ends the journal: its preallocated tail is zeros)
        b'[1, 2]\n"x"\n{"k": 1, "e": 2}\n{"k": "a", "e": "start", "row": ["not", "a", "dict"]}\n',
        b'{"k": "a", "e": "start", "row": {"started_at": "not a date"}}\n{"k": "a", "e": "try"}\n'
        b'{"k": "b", "e": "answer", "row": {"attempts": [1, 2], "status": "ok"}}\n'
        b'{"k": "c", "e": "answer", "row": {"response": {"a": 1}, "status": "ok"}}\n',
    ],
)
def test_a_damaged_journal_is_skipped_line_by_line_never_a_traceback(tmp_path, damage):
    from factory.llm.journal import journal_path
    from factory.llm.replay import replay_journal

    store = Store.open(tmp_path / "run")
    path = journal_path(store.path)
    good = b'{"k": "ok1", "e": "start", "row": {"stage": "smoke"}}\n{"k": "ok1", "e": "try"}\n'
    path.write_bytes(damage + good)
    replayed = replay_journal(store, path)
    assert replayed.answered == 0 and replayed.lost_attempts >= 1  # the good lines still count
    assert store.query("SELECT status, error_kind FROM llm_calls WHERE request_hash = 'ok1'") == [
        ("error", "interrupted")
    ]
    store.close()


def test_an_attempt_is_journaled_when_its_request_leaves_not_before(server, tmp_path):
    """The journal counts an attempt once its headers are on the wire, so a request that never
    left (no connection) is not counted as one the provider saw, and one that left always is."""
    import asyncio
    import json
    import socket

    from test_llm_faults import ask

    from factory.llm import LLMClient, LLMConfig

    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        dead_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"

    def tries(url):
        async def go():
            config = LLMConfig(model="loopback", base_url=url, max_retries=0, timeout_s=10)
            store = Store(tmp_path / f"{len(list(tmp_path.iterdir()))}.duckdb")
            llm = LLMClient(config, store, run_id="t")
            await llm.start()
            result = await llm.run(ask("q "))
            lines = [json.loads(line) for line in journal_lines(journal_path(store.path))]
            await llm.close()
            return result, sum(line["e"] == "try" for line in lines)

        return asyncio.run(go())

    refused, refused_tries = tries(dead_url)
    assert refused.error_kind == "connection" and refused.attempts == 1 and refused_tries == 0
    answered, answered_tries = tries(server.base_url)
    assert answered.ok and answered_tries == 1 == len(server.requests)


def test_factory_calls_on_a_killed_run_says_what_waits_in_its_journal(server, tmp_path, capsys):
    """Read-only readers do not replay the journal (the next command's LLM client does), so they say what it holds."""
    from factory.cli import main

    server.route("slow", Action(delay_s=3))
    run_killed_client(server, tmp_path, 5, wait_slow=True, store_name="factory.duckdb")
    assert main(["calls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "calls: 0 (0 ok)" in out
    assert "in the call journal, not yet counted above" in out and "5 answered calls, 1 attempts without" in out
    store = Store(tmp_path / "factory.duckdb")
    CallLog(store).close()  # the next command's LLM client replays it
    store.close()
    assert main(["calls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "calls: 6 (5 ok)" in out and "in the call journal" not in out


def test_journal_lines_already_flushed_are_not_counted_twice(server, tmp_path, capsys):
    import re

    from factory.cli import main

    server.route("slow", Action(delay_s=3))
    run_killed_client(server, tmp_path, 8, wait_slow=True, store_name="factory.duckdb", flush_every_s=0.01,
                      pause_s=0.05, wait_flushed=True)  # fmt: skip
    assert main(["calls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    ok = int(re.search(r"calls: \d+ \((\d+) ok\)", out).group(1))
    waiting = re.search(r"(\d+) answered calls", out)
    assert ok > 0, "some answers reached DuckDB before the kill"
    assert ok + (int(waiting.group(1)) if waiting else 0) == 8
