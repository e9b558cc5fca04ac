"""The smoke job: a few structured responses through the full LLM path,
logged to the run store. It proves install, model, schema and store work."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field, StringConstraints

from ..llm import LLMClient, Request, Result
from ..prompts import load_prompt, prompt_file, render_prompt
from ..run import open_run

if TYPE_CHECKING:  # the run config gathers this package's section: a type here, not an import
    from ..run_config import FactoryConfig

# Every string and list is bounded: under a schema, a small model otherwise
# fills an open string until max_tokens cuts it off.
ParameterName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{1,24}$")]


class ToolIdea(BaseModel):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{2,32}$")
    description: str = Field(min_length=10, max_length=160)
    parameters: list[ParameterName] = Field(min_length=1, max_length=4)


SMOKE_PARAMS = {"max_tokens": 300}


def smoke_requests(n: int, stage: str) -> list[Request]:
    topics = [t for t in prompt_file("smoke/topics.txt").read_text().splitlines() if t.strip()]
    system = load_prompt("smoke/system")
    requests = []
    for i in range(n):
        topic = topics[i % len(topics)]
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": render_prompt("smoke/user", topic=topic)},
        ]
        # Past the topic list, repeated topics become further samples, not cache hits.
        requests.append(
            Request(messages, ToolIdea, stage=stage, sample_index=i // len(topics), params=SMOKE_PARAMS, tag=topic)
        )
    return requests


@dataclass
class SmokeOutcome:
    run_id: str
    results: list[Result]


async def run_smoke_async(config: FactoryConfig, progress: bool = True) -> SmokeOutcome:
    with open_run(config.run_dir, "smoke", config, require_an_answer=False) as run:
        async with LLMClient(config.llm, run.store, run.run_id) as llm:
            results = await llm.complete_many(
                smoke_requests(config.smoke.n, config.smoke.stage), progress=progress, desc="smoke"
            )
        return SmokeOutcome(run.run_id, results)


def run_smoke(config: FactoryConfig, progress: bool = True) -> SmokeOutcome:
    return asyncio.run(run_smoke_async(config, progress))


async def ping_async(config: FactoryConfig) -> Result:
    """One small structured call, logged in the run store (stage "ping")."""
    with open_run(config.run_dir, "ping", config, require_an_answer=False) as run:
        request = smoke_requests(1, "ping")[0]  # inside the run: its prompts_dir applies
        # A ping checks the endpoint now, so it never answers from the cache.
        async with LLMClient(config.llm.model_copy(update={"cache": False}), run.store, run.run_id) as llm:
            return await llm.run(request)


def ping(config: FactoryConfig) -> Result:
    return asyncio.run(ping_async(config))
