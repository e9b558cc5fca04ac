"""What `tasks expand` and `tasks vary` write: the kept tasks as task rows, every candidate's verdicts, a summary.

report = write_outputs(result, Path("tasks.jsonl"))   # tasks.jsonl, tasks.report.jsonl, tasks.summary.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from ..errors import FactoryError
from .candidate import Candidate
from .expand import ExpandResult


def task_row(task: Any) -> dict[str, Any]:
    """A kept variant as a task row: math answers as they are; code tests as the ground truth the checker reads."""
    row = {"id": task.id.split("/", 1)[-1], "data_source": task.source, "domain": task.domain,
           "question": task.question, "extra_info": task.extra}  # fmt: skip
    if task.domain == "code":
        row["reward_model"] = {"style": "rule", "ground_truth": json.dumps(task.tests)}
    else:
        row["answers"] = task.answers
    return row


def report_row(candidate: Candidate) -> dict:
    return {
        "id": candidate.task.id, "kind": candidate.kind, "hops": candidate.hops, "kept": candidate.kept,
        "dropped_by": candidate.dropped_by, "question": candidate.task.question, "answers": candidate.task.answers,
        "verdicts": {gate: {"passed": passed, "reason": reason} for gate, (passed, reason) in candidate.verdicts.items()},
        "not_run": candidate.not_run, "provenance": candidate.provenance,
    }  # fmt: skip


def write_outputs(result: ExpandResult, out: Path) -> Path:
    report = out.with_name(out.stem + ".report.jsonl")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"".join(orjson.dumps(task_row(c.task)) + b"\n" for c in result.kept))
        report.write_bytes(b"".join(orjson.dumps(report_row(c)) + b"\n" for c in result.candidates))
        summary = out.with_name(out.stem + ".summary.json")
        summary.write_text(json.dumps(result.summary(), indent=2) + "\n")
    except OSError as exc:
        raise FactoryError(f"{out}: cannot write the tasks: {exc.strerror or exc}") from None
    return report
