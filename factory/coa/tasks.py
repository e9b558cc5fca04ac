"""Tasks for the Chain-of-Agents path: one record, read from verl/AFM rows or plain QA rows.

    tasks = load_tasks("../shared/data/tasks/math500.parquet")      # JSONL, parquet,
    tasks = load_tasks(dataset_or_folder, domain="qa", limit=100)   # a datasets object or folder
    picked = sample_tasks(tasks, 20, seed=0)

Row shapes understood:
- verl RL rows (AFM): `prompt` (chat messages; the last user message is an AFM
  system prompt, then "Task:" and the question), `reward_model.ground_truth`
  (a LaTeX answer, or for code a JSON string with `stdin`/`expected_output`
  lists or a `functional` assert script), `extra_info`, `ability`, `data_source`.
- Search-R1 style verl rows: the same, with ground_truth {"target": [aliases]}.
- plain rows: `question` plus `answer` / `answers` / `golden_answers` (a string
  or a list of aliases), optional `data_source` / `id`.

Bad input, by kind: a file that cannot be read as a whole (missing, wrong type,
a line that is not JSON, no question column) raises TaskError naming the file
and row. A row that parses but cannot become a task (no question text, a code
ground truth that is not JSON, a repeated id) is skipped and counted by reason;
`read_tasks` returns the counts, `load_tasks` logs them in one warning line, and
`strict=True` turns the first skip into a TaskError instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError, FactoryError
from ..rows import dataset_label, dataset_rows, json_rows, load_from_disk, parquet_rows

Domain = Literal["qa", "math", "code"]
DOMAINS: tuple[str, ...] = ("qa", "math", "code")
TASK_MARKER = "Task:"
ANSWER_FIELDS = ("answers", "answer", "golden_answers", "ground_truth")
MATH_SOURCE = re.compile(r"math|amc|aime|gsm|olympiad|minerva|hmmt", re.IGNORECASE)
CODE_ABILITIES = frozenset({"code", "coding", "programming"})
log = logging.getLogger(__name__)


class TaskError(FactoryError):
    """A task file or row cannot be read; the message names the file and row."""


class Task(BaseModel):
    """One task, as the CoA path and the checkers see it, whatever file it came from."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)  # "<data_source>/<index>", or "<data_source>/h<hash of the question>"
    question: str = Field(min_length=1)
    answers: list[str] = Field(default_factory=list)  # reference answer and aliases; empty for code
    tests: dict[str, Any] | None = None  # code: {"stdin", "expected_output"} or {"functional", "func_name"}
    domain: Domain
    source: str
    prompt: list[dict[str, Any]] | None = None  # the original chat prompt, when the row had one
    extra: dict[str, Any] = Field(default_factory=dict)  # extra_info, ability, ... as they came


class RowProblem(Exception):
    """A row that parses but cannot become a task: skipped (or fatal with strict=True)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass
class TaskSet:
    tasks: list[Task]
    skipped: Counter = field(default_factory=Counter)  # reason -> rows skipped
    first_problem: str | None = None  # "file row N: message" of the first skipped row


def load_tasks(src: str | Path | Any, domain: str | None = None, limit: int | None = None,
               strict: bool = False, split: str = "train") -> list[Task]:  # fmt: skip
    """Tasks from a JSONL/parquet file, a save_to_disk folder or a `datasets` object.

    domain: force "qa" | "math" | "code" (default: inferred per row).
    limit: stop after this many tasks. split: the split of a DatasetDict.
    """
    result = read_tasks(src, domain, limit, strict, split)
    if result.skipped:
        counts = ", ".join(f"{n} {reason}" for reason, n in result.skipped.most_common())
        log.warning("task rows skipped: %d (%s); first: %s", sum(result.skipped.values()), counts, result.first_problem)
    return result.tasks


def read_tasks(src: str | Path | Any, domain: str | None = None, limit: int | None = None,
               strict: bool = False, split: str = "train") -> TaskSet:  # fmt: skip
    """Like load_tasks, and also says which rows were skipped and why."""
    if domain is not None and domain not in DOMAINS:
        raise TaskError(f"unknown task domain '{domain}' (use one of: {', '.join(DOMAINS)})")
    if limit is not None and limit < 0:
        raise TaskError(f"limit must be >= 0, not {limit}")
    label, rows = open_rows(src, split)
    return collect(rows, label, domain, limit, strict)


def open_rows(src: str | Path | Any, split: str) -> tuple[str, Iterable[tuple[str, dict]]]:
    """(a label for the source, (place, row) pairs); the readers are shared with personas."""
    try:
        if not isinstance(src, (str, Path)):
            return dataset_label(src), dataset_rows(src, split, "dataset")[1]
        path = Path(src)
        if path.is_dir():
            return path.name, dataset_rows(load_from_disk(path), split, str(path))[1]
        if not path.exists():
            raise TaskError(f"{path}: no such task file or dataset folder")
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".json"):
            return path.name, json_rows(path)[1]
        if suffix == ".parquet":
            return path.name, parquet_rows(path)[1]
        raise TaskError(f"{path}: unsupported task file type '{suffix}' (use .jsonl, .parquet or a dataset folder)")
    except TaskError:
        raise
    except FactoryError as exc:  # the shared readers speak of files generally: same message, our type
        raise TaskError(str(exc)) from None


def collect(
    rows: Iterable[tuple[str, dict]], label: str, domain: str | None, limit: int | None, strict: bool
) -> TaskSet:
    result, seen = TaskSet([]), set()
    for place, row in rows:
        if limit is not None and len(result.tasks) >= limit:
            break
        try:
            task = row_to_task(row, place, label, domain)
            if task.id in seen:
                raise RowProblem("duplicate id", f"id '{task.id}' appeared before")
        except RowProblem as problem:
            if strict:
                raise TaskError(f"{place}: {problem}") from None
            result.skipped[problem.reason] += 1
            result.first_problem = result.first_problem or f"{place}: {problem}"
            continue
        seen.add(task.id)
        result.tasks.append(task)
    return result


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


def infer_domain(row: dict, source: str, tests: dict | None) -> str:
    if row.get("domain") in DOMAINS:
        return row["domain"]
    ability = str(row.get("ability") or "").lower()
    if tests is not None or ability in CODE_ABILITIES:
        return "code"
    # MATH-500 rows say ability "fact-reasoning", so the source name decides first.
    if "math" in ability or MATH_SOURCE.search(source):
        return "math"
    return "qa"


def sample_tasks(tasks: list[Task], n: int, seed: int = 0) -> list[Task]:
    """n tasks picked by a seeded hash of their ids: the same picks whatever the input
    order, and a larger n keeps every task a smaller n picked."""
    if n < 0:
        raise TaskError(f"cannot sample {n} tasks")
    return sorted(tasks, key=lambda task: hashlib.sha256(f"{seed}:{task.id}".encode()).digest())[:n]


def select_tasks(path: str | None, domain: str | None, count: int | None, seed: int, missing: str) -> list[Task]:
    """The tasks a command runs on: those of `path` (of one domain if given), `count` of them
    sampled (all when None). `missing` is the error to show when no task file is named."""
    if not path:
        raise ConfigError(missing)
    tasks = load_tasks(path)
    if domain is not None:
        tasks = [task for task in tasks if task.domain == domain]
    if not tasks:
        raise ConfigError(f"{path}: no tasks" + (f" of domain {domain}" if domain else ""))
    return tasks if count is None else sample_tasks(tasks, min(count, len(tasks)), seed)
