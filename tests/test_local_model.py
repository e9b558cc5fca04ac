"""The embedded llama.cpp server with SmolLM2-135M, for real (no mocks)."""

import asyncio
import subprocess
import sys
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, StringConstraints

from factory.llm import LLMClient, LLMConfig
from factory.llm.local import local_server
from factory.store import Store

pytestmark = pytest.mark.local_model


class City(BaseModel):
    city: str = Field(min_length=2, max_length=40)
    country: str = Field(min_length=2, max_length=40)
    # item strings bounded too: SmolLM2 can otherwise run on inside one until max_tokens
    landmarks: list[Annotated[str, StringConstraints(min_length=2, max_length=40)]] = Field(min_length=1, max_length=3)


def test_structured_calls_on_the_embedded_model(tmp_path):
    store = Store(tmp_path / "local.sqlite")
    prompts = ["Name a city in France and its landmarks.", "Name a city in Japan and its landmarks."]

    async def go():
        async with LLMClient(LLMConfig(max_tokens=200, temperature=0.2), store) as llm:
            assert llm.endpoint.base_url.startswith("http://127.0.0.1:")
            return await asyncio.gather(
                *[llm.complete([{"role": "user", "content": p}], City, stage="it") for p in prompts]
            )

    results = asyncio.run(go())
    for result in results:
        assert result.ok, result.error
        assert isinstance(result.parsed, City) and result.completion_tokens > 0
    assert store.query("SELECT count(*), min(status) FROM llm_calls") == [(2, "ok")]


def test_parallel_processes_get_their_own_port(tmp_path):
    code = (
        "from factory.llm.local import local_server; from factory.llm import LocalModelConfig;"
        "print(local_server('local', LocalModelConfig(n_parallel=1, n_ctx=1024)).base_url)"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    urls = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)  # and each process exited: its server stopped with it
    assert len(set(urls)) == 2 and all(u.startswith("http://127.0.0.1:") for u in urls)


def test_one_server_per_model_and_settings_in_a_process():
    from factory.llm import LocalModelConfig

    a = local_server("local", LocalModelConfig(n_parallel=1, n_ctx=1024))
    b = local_server("local", LocalModelConfig(n_parallel=1, n_ctx=1024))
    assert a is b and a.base_url
