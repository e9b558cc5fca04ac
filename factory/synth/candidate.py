"""`Candidate`: one synthesized task on its way through the quality gates.

Every expansion (depth and width over a corpus, math/code variants computed in the
sandbox) yields candidates; each gate records its verdict by name, with the reason
in words, so a dropped task says why, and the kept ones say which gates they passed.

    candidate = Candidate(task, kind="depth", hops=3, provenance={...})
    candidate.judge("retrievable", False, "hop 2: 'capital of Peru' not in the top 5")
    candidate.kept  # False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..tasks import Task


@dataclass
class Candidate:
    task: Task  # task.source names the expansion ("synth:depth"); task.extra["provenance"] mirrors `provenance`
    kind: str  # depth | width | math_sweep | code_tests | ...
    hops: int = 1  # dependent lookups (depth), sub-questions (width) or computation steps the answer needs
    provenance: dict[str, Any] = field(default_factory=dict)  # seed task id, documents, hop chain, programs
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)  # gate -> (passed, reason)
    not_run: dict[str, str] = field(default_factory=dict)  # gate -> why it was not run (recorded, never a pass)

    def judge(self, gate: str, passed: bool, reason: str = "") -> bool:
        self.verdicts[gate] = (passed, reason)
        return passed

    def skip(self, gate: str, why: str) -> None:
        self.not_run[gate] = why

    @property
    def kept(self) -> bool:
        return all(passed for passed, _ in self.verdicts.values())

    @property
    def dropped_by(self) -> str | None:
        """The first gate that dropped it, or None."""
        return next((gate for gate, (passed, _) in self.verdicts.items() if not passed), None)
