"""Turn one row into a Task: question text, answer aliases or code tests, id and extras.

Row shapes understood:
- verl RL rows (AFM): `prompt` (chat messages; the last user message is an AFM
  system prompt, then "Task:" and the question), `reward_model.ground_truth`
  (a LaTeX answer, or for code a JSON string with `stdin`/`expected_output`
  lists or a `functional` assert script), `extra_info`, `ability`, `data_source`.
- Search-R1 style verl rows: the same, with ground_truth {"target": [aliases]}.
- plain rows: `question` plus `answer` / `answers` / `golden_answers` (a string
  or a list of aliases), optional `data_source` / `id`.

A row that parses but cannot become a task raises RowProblem with a short reason;
the loaders count and skip it (or stop at it, with strict=True).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from .domains import infer_domain
from .model import Task, TaskError

TASK_MARKER = "Task:"
ANSWER_FIELDS = ("answers", "answer", "golden_answers", "ground_truth")


class RowProblem(Exception):
    """A row that parses but cannot become a task: skipped (or fatal with strict=True)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def row_to_task(row: dict, place: str, label: str, domain: str | None) -> Task:
    if "question" not in row and "prompt" not in row:
        keys = ", ".join(repr(k) for k in row) or "none"
        raise TaskError(f"{place}: no 'question' or 'prompt' field (its keys: {keys})")
    source = str(row.get("data_source") or label)
    prompt = chat_messages(row.get("prompt"))
    question = question_text(row, prompt)
    answers, tests = references(row)
    extra = extra_of(row)
    if tests is not None and "functional" in tests:
        tests["func_name"] = function_name(extra)
    try:
        return Task(
            id=task_id(row, extra, source, question), question=question, answers=answers, tests=tests,
            domain=domain or infer_domain(row, source, tests), source=source, prompt=prompt, extra=extra,
        )  # fmt: skip
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RowProblem("invalid row", f"field '{'.'.join(map(str, first['loc']))}': {first['msg']}") from None


def extra_of(row: dict) -> dict[str, Any]:
    extra = row.get("extra_info") or {}
    if not isinstance(extra, dict):
        raise RowProblem("bad extra_info", f"extra_info should be an object, got {type(extra).__name__}")
    return {**extra, "ability": row["ability"]} if row.get("ability") else dict(extra)


def chat_messages(prompt: Any) -> list[dict[str, Any]] | None:
    if prompt is None:
        return None
    if isinstance(prompt, str):  # a bare prompt string: one user message
        return [{"role": "user", "content": prompt}]
    messages = [dict(m) for m in prompt if isinstance(m, dict)]
    if not messages:
        raise RowProblem("bad prompt", "'prompt' holds no chat messages")
    return messages


def question_text(row: dict, prompt: list[dict] | None) -> str:
    if isinstance(row.get("question"), str) and row["question"].strip():
        return row["question"].strip()
    users = [m for m in prompt or [] if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not users:
        raise RowProblem("no question", "no question text and no user message in 'prompt'")
    content = users[-1]["content"]
    # The AFM system prompt sits in the same user message, before the last "Task:".
    question = content.rsplit(TASK_MARKER, 1)[-1].strip()
    if not question:
        raise RowProblem("no question", "the user message is empty after its 'Task:' marker")
    return question


def references(row: dict) -> tuple[list[str], dict | None]:
    """(answer aliases, code tests) from reward_model.ground_truth or an answer column."""
    reward = row.get("reward_model")
    truth = reward.get("ground_truth") if isinstance(reward, dict) else None
    if truth is None:
        truth = next((row[name] for name in ANSWER_FIELDS if row.get(name) is not None), None)
    tests = code_tests(truth)
    if tests is not None:
        return [], tests
    return aliases(truth), None


def code_tests(truth: Any) -> dict | None:
    """livecodebench ground truth: a JSON object string with test cases, else None."""
    if isinstance(truth, dict):
        parsed = dict(truth)
    elif isinstance(truth, str) and truth.lstrip().startswith("{") and ('"stdin"' in truth or '"functional"' in truth):
        try:
            parsed = json.loads(truth)
        except json.JSONDecodeError as exc:
            raise RowProblem("bad tests", f"ground_truth looks like code tests but is not JSON ({exc.msg})") from None
    else:
        return None
    if "functional" in parsed or ("stdin" in parsed and "expected_output" in parsed):
        if len(parsed.get("stdin", [])) != len(parsed.get("expected_output", [])):
            raise RowProblem("bad tests", "ground_truth has unequal stdin and expected_output lists")
        return parsed
    return None


def aliases(truth: Any) -> list[str]:
    if truth is None:
        return []
    if isinstance(truth, dict) and "target" in truth:  # Search-R1 style: {"target": [aliases]}
        return aliases(truth["target"])
    if isinstance(truth, dict):
        raise RowProblem("bad answer", f"ground_truth is an object with keys {sorted(truth)[:5]}, not an answer")
    values = [truth] if isinstance(truth, (str, int, float)) else list(truth)
    return [str(value).strip() for value in values if str(value).strip()]


def function_name(extra: dict) -> str | None:
    metadata = extra.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata or "{}")
        except json.JSONDecodeError:
            return None
    return metadata.get("func_name") if isinstance(metadata, dict) else None


def task_id(row: dict, extra: dict, source: str, question: str) -> str:
    index = row.get("id", extra.get("index"))
    if index not in (None, ""):
        return f"{source}/{index}"
    return f"{source}/h{hashlib.sha1(question.encode('utf-8')).hexdigest()[:12]}"
