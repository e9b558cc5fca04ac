"""The call log's writes of one event-loop turn share one commit (factory/llm/group_commit.py),
and an answer is still committed before its caller gets it."""

import asyncio
import contextlib
import sqlite3
import time

import pytest
from loopback_server import HASH_HEADER, Action, LoopbackServer
from test_llm_faults import ask

from factory.errors import StoreWriteError
from factory.llm import LLMClient, LLMConfig
from factory.llm.calllog import CallLog
from factory.store import Store, utcnow


def answer(key: str, status: str = "ok") -> dict:
    return {"request_hash": key, "run_id": "r1", "stage": "t", "status": status, "attempts": 1,
            "response": f"answer {key}", "cost_usd": 0.01, "finished_at": utcnow()}  # fmt: skip


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A store whose commits are counted."""
    store = Store(tmp_path / "s.sqlite")
    commits = []
    commit = store.commit
    monkeypatch.setattr(store, "commit", lambda tables, statements: (commits.append(len(statements)), commit(tables, statements))[1])  # fmt: skip  # noqa: E501
    return store, commits


def test_the_writes_of_one_turn_are_one_commit(counted):
    store, commits = counted
    log = CallLog(store)

    async def turn():
        for key in ("a", "b", "c"):
            log.begin(key, {"run_id": "r1", "stage": "t"})
            log.attempt(key, 1)
        done = [log.record(answer(key)) for key in ("a", "b")]  # "c" stays on the wire
        await asyncio.gather(*done)

    asyncio.run(turn())
    assert commits == [7]  # three attempts, two answers (a row and its pending row's removal each)
    assert store.query("SELECT request_hash FROM llm_calls ORDER BY 1") == [("a",), ("b",)]
    assert store.query("SELECT request_hash, attempts FROM llm_pending") == [("c", 1)]
    assert log.ok_keys >= {"a", "b"} and log.spent_usd == pytest.approx(0.02)


def test_an_answer_is_committed_before_its_caller_gets_it(server, fast_config, tmp_path):
    """Each caller looks at the file from a connection of its own the moment its result arrives."""
    path = tmp_path / "s.sqlite"

    async def ask_and_look(llm, i):
        result = await llm.run(ask(f"q{i} "))
        with sqlite3.connect(path) as other:
            row = other.execute("SELECT status FROM llm_calls WHERE request_hash = ?", [result.request_hash])
            return row.fetchall()

    async def go():
        async with LLMClient(fast_config(), Store(path), run_id="r1") as llm:
            return await asyncio.gather(*(ask_and_look(llm, i) for i in range(24)))

    assert asyncio.run(go()) == [[("ok",)]] * 24


def test_a_failed_commit_reaches_its_waiters_and_stops_the_log(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.sqlite")
    log = CallLog(store)
    monkeypatch.setattr(store, "commit", lambda *a: (_ for _ in ()).throw(sqlite3.OperationalError("disk I/O error")))
    seen = []

    async def turn():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: seen.append(context))
        log.attempt("a", 1)  # not awaited: its failure is the log's
        outcome = await asyncio.gather(log.record(answer("b")), return_exceptions=True)
        return outcome

    [outcome] = asyncio.run(turn())
    assert isinstance(outcome, StoreWriteError) and "cannot write the call log" in str(outcome)
    assert isinstance(log.failure, StoreWriteError) and not seen  # nothing escaped into the loop


def test_outside_an_event_loop_a_write_is_committed_at_once(counted):
    store, commits = counted
    log = CallLog(store)
    assert log.record(answer("a")) is None
    log.hit("a")
    assert commits == [2, 1]
    assert store.query("SELECT status, cache_hits FROM llm_calls") == [("ok", 1)]


def test_a_cached_answer_queued_this_turn_is_found(counted):
    """A second ask of a key answered earlier in the same turn reads the row its commit has not yet written."""
    store, _ = counted
    log = CallLog(store)

    async def turn():
        log.record(answer("a"))
        return log.cached("a")

    row = asyncio.run(turn())
    assert row is not None and row["response"] == "answer a"


class LookingServer(LoopbackServer):
    """A loopback server that, as each request arrives, reads the store's pending attempts from a connection of its own."""

    def __init__(self, store_path):
        super().__init__()
        self.store_path, self.pending_seen = store_path, []

    async def _handle(self, request):
        key = request.headers.get(HASH_HEADER)
        with contextlib.closing(sqlite3.connect(self.store_path)) as other:
            rows = other.execute("SELECT attempts FROM llm_pending WHERE request_hash = ?", [key]).fetchall()
        self.pending_seen.append(rows)
        return await super()._handle(request)


def test_each_attempt_is_committed_before_the_server_sees_it(tmp_path, monkeypatch):
    """The turn's commit is shared, but a request waits for it before a byte leaves: a kill after the send still
    counts it. Each commit is slowed down, so a request sent before its commit ended would be seen without it."""
    commit = Store.commit
    monkeypatch.setattr(Store, "commit", lambda store, *args: (time.sleep(0.05), commit(store, *args))[1])
    server = LookingServer(tmp_path / "s.sqlite")
    server.route("retry", Action(status=500))  # a second attempt of one call: its row shows attempts 2
    server.start_in_thread()
    config = LLMConfig(model="loopback", base_url=server.base_url, backoff_base_s=0.01, backoff_max_s=0.02)

    async def go():
        async with LLMClient(config, Store(tmp_path / "s.sqlite"), run_id="r1") as llm:
            return await asyncio.gather(*(llm.run(ask(f"q{i} ")) for i in range(16)), llm.run(ask("retry")))

    try:
        results = asyncio.run(go())
    finally:
        server.stop()
    assert all(r.ok for r in results)
    assert len(server.pending_seen) == 18
    assert sorted(server.pending_seen) == [[(1,)]] * 17 + [[(2,)]]
