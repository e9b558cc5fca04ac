"""The young-generation GC threshold is raised while LLM clients are open, and put back after the last."""

import asyncio
import gc

import pytest

from factory.llm import LLMClient, young_gc


@pytest.fixture
def default_threshold():
    saved = gc.get_threshold()
    gc.set_threshold(young_gc.CPYTHON_DEFAULT, *saved[1:])
    yield
    gc.set_threshold(*saved)


def test_raised_while_clients_are_open_and_put_back_after_the_last(default_threshold, fast_config):
    async def go():
        seen = []
        async with LLMClient(fast_config()):
            seen.append(gc.get_threshold()[0])
            async with LLMClient(fast_config()):
                seen.append(gc.get_threshold()[0])
            seen.append(gc.get_threshold()[0])  # one client still open
        seen.append(gc.get_threshold()[0])
        return seen

    assert asyncio.run(go()) == [5000, 5000, 5000, 700]


def test_a_threshold_the_program_chose_is_left_alone(default_threshold):
    gc.set_threshold(1234, 10, 10)
    young_gc.client_opened()
    assert gc.get_threshold()[0] == 1234
    young_gc.client_closed()
    assert gc.get_threshold()[0] == 1234


def test_a_change_made_while_clients_were_open_is_kept(default_threshold):
    young_gc.client_opened()
    gc.set_threshold(999, 10, 10)  # the program's own choice, made meanwhile
    young_gc.client_closed()
    assert gc.get_threshold()[0] == 999
