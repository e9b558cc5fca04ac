"""A call its caller cancels (a task past coa.task_timeout_s) is recorded as cancelled, in words that say so, and
is not counted again among the failed calls: the task's own timeout is the failure (issue 28)."""

import asyncio

from loopback_server import ok

from factory.failures import failure_sections
from factory.llm import LLMClient
from factory.llm.request import CANCELLED
from factory.store import Store


def test_a_cancelled_call_is_recorded_as_cancelled_and_not_as_a_failure(server, fast_config, tmp_path):
    server.route("slow", ok("late", delay_s=5))
    store = Store(tmp_path / "s.sqlite")

    async def run():
        async with LLMClient(fast_config(), store) as llm:
            try:
                await asyncio.wait_for(llm.complete([{"role": "user", "content": "slow"}], stage="coa"), 0.3)
            except TimeoutError:
                return "timed out"

    assert asyncio.run(run()) == "timed out"
    ((kind, error),) = store.query("SELECT error_kind, error FROM llm_calls")
    assert kind == "cancelled" and error == CANCELLED and "killed" not in error
    assert [s.name for s in failure_sections(store)] == []  # the task's timeout is its failure, not this call
