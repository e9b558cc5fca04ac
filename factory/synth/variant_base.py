"""What the math and the code variants share: the expansion's settings, a new candidate, a sandboxed run.

math_code.py (the entry point and the math variants) and code_variants.py both
build their candidates here, so a synthesized task's id, source, provenance and
the record of a failed writer call have one shape whatever the seed's domain.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..checks import MathAnswer
from ..llm import LLMClient, Result
from ..sandbox import SandboxLimits, SandboxResult, arun_program
from ..tasks import Task
from .candidate import Candidate

STDOUT_KEPT = 200  # characters of each run's input and output kept in the provenance


@dataclass
class Expansion:
    """What every variant of one call shares: the client, the sandbox limits, the math checker."""

    client: LLMClient
    per_seed: int
    math_limits: SandboxLimits
    code_limits: SandboxLimits | None
    checker: MathAnswer | None
    gate: asyncio.Semaphore  # sandbox runs at once


def new_candidate(seed: Task, index: int, kind: str, question: str, hops: int, provenance: dict) -> Candidate:
    """A candidate whose task is new (no chat prompt: the seed's embeds the seed's question)."""
    provenance = {"seed": seed.id, "seed_source": seed.source, **provenance}
    extra: dict[str, Any] = {"provenance": provenance}
    if seed.extra.get("starter_code"):
        extra["starter_code"] = seed.extra["starter_code"]
    task = Task(
        id=f"synth:{kind}/{seed.id}/{index}", question=question, domain=seed.domain, source=f"synth:{kind}", extra=extra
    )
    return Candidate(task, kind=kind, hops=hops, provenance=provenance)


def unwritten(seed: Task, index: int, kind: str, result: Result) -> Candidate:
    """The writer's call failed (transport, schema, refusal): a dropped candidate that says so."""
    candidate = new_candidate(seed, index, kind, seed.question, 1, {"request": result.request_hash})
    candidate.judge("written", False, f"{result.error_kind}: {result.error or 'no reply'}"[:300])
    return candidate


async def sandboxed(run: Expansion, source: str, stdin: str, limits: SandboxLimits) -> SandboxResult:
    async with run.gate:
        return await arun_program(source, stdin, limits)


def outcome(verdict: SandboxResult, stdin: str) -> dict[str, Any]:
    """One run as the provenance keeps it."""
    status = f"{verdict.status}/{verdict.reason}" if verdict.reason else verdict.status
    return {"stdin": stdin[:STDOUT_KEPT], "status": status, "error": verdict.error,
            "stdout": verdict.stdout[:STDOUT_KEPT], "duration_s": round(verdict.duration_s, 3)}  # fmt: skip
