"""RUN_DIR/pipeline.json: which stages of `factory run` finished, with what inputs.

A stage is skipped on a rerun when it finished with the same fingerprint: a hash of
its own settings (file contents included, not just their names) and of the
fingerprints of the stages before it, so a change anywhere upstream reruns
everything downstream. A stage that failed or was interrupted has no entry and
runs again; generation and training resume on their own (cached LLM calls,
checkpoints), so a rerun redoes little.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FactoryError

LEDGER_FILENAME = "pipeline.json"


def fingerprint(*parts: Any) -> str:
    """A short hash of JSON-able parts; a Path stands for its file's bytes (or its name when absent)."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            digest.update(part.read_bytes() if part.is_file() else f"missing:{part}".encode())
        else:
            digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


@dataclass
class Ledger:
    path: Path
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, run_dir: Path) -> Ledger:
        path = run_dir / LEDGER_FILENAME
        if not path.is_file():
            return cls(path)
        try:
            stages = json.loads(path.read_text(encoding="utf-8")).get("stages", {})
        except (ValueError, UnicodeDecodeError, AttributeError):
            stages = {}  # a damaged ledger only costs a rerun of every stage
        return cls(path, stages if isinstance(stages, dict) else {})

    def finished(self, stage: str, print_: str) -> dict[str, Any] | None:
        entry = self.stages.get(stage)
        return entry if isinstance(entry, dict) and entry.get("fingerprint") == print_ else None

    def forget(self, stage: str) -> None:
        if self.stages.pop(stage, None) is not None:
            self.save()

    def record(self, stage: str, print_: str, seconds: float, summary: list[str]) -> None:
        self.stages[stage] = {"fingerprint": print_, "seconds": round(seconds, 2), "summary": summary}
        self.save()

    def save(self) -> None:
        """Atomic replace: a kill mid-write leaves the previous ledger."""
        temporary = self.path.with_suffix(".json.tmp")
        try:
            temporary.write_text(json.dumps({"stages": self.stages}, indent=2), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as exc:
            raise FactoryError(f"cannot write {self.path}: {exc.strerror}") from None
