"""RUN_DIR/pipeline.json: which stages of `factory run` finished, with what inputs.

A stage is skipped on a rerun when it finished with the same fingerprint, a hash of
what decides the stage's output:

- its settings, less the ones in HOW_NOT_WHAT below (how fast, how patiently, how
  cheaply, where caches live: a rerun with another value would make the same thing);
  a field not listed there, a new one included, is part of the fingerprint;
- the bytes of the files it reads (persona and task files, filter and train
  configs), the prompt folder, and for train the exported files it trains on;
- the fingerprints of the stages before it: a stage that reads the store can only
  know its input changed when a stage before it ran with other settings. Train is
  the exception: it reads nothing but its config and the exported files, so it
  chains on their bytes alone, and an upstream rerun that exports the same bytes
  does not retrain.

A stage that failed or was interrupted has no entry and runs again; generation and
training resume on their own (cached LLM calls, checkpoints), so a rerun redoes little.
A stage that finished with failed calls (timeouts, a server gone) is not rerun for a
longer timeout: `--from STAGE` runs it again (refine and coa keep a failed row as done,
coa resumes the tasks cut off by coa.task_timeout_s, passrate asks failed samples again).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FactoryError

LEDGER_FILENAME = "pipeline.json"

# Settings that change how a stage's calls are made, never what a finished stage made: left out of the
# fingerprints, so changing them reruns nothing. Dotted paths from the config's root; an LLM section read
# elsewhere (pipeline.passrate.policy) drops the `llm.` ones. Anything not named here stays in.
HOW_NOT_WHAT: dict[str, str] = {
    # llm: (factory/llm/config.py). A call that fails under them is recorded as a failure, which a rerun
    # of refine or coa does not ask again: another value would not change what a rerun makes.
    "llm.concurrency": "requests in flight at once",
    "llm.rpm": "a rate limit",
    "llm.tpm": "a rate limit",
    "llm.timeout_s": "how long one request may take",
    "llm.stream": "the same reply, streamed or whole",
    "llm.max_retries": "transport retries of one request",
    "llm.backoff_base_s": "waits between transport retries",
    "llm.backoff_max_s": "waits between transport retries",
    "llm.cooldown_burst": "the shared pause after many 429s",
    "llm.cooldown_window_s": "the shared pause after many 429s",
    "llm.cooldown_s": "the shared pause after many 429s",
    "llm.api_key_env": "which variable holds the key, not which model answers",
    "llm.transport": "which client speaks to the endpoint: the same request and cache key",
    "llm.cache": "whether answers are reused: a rerun skips finished rows either way",
    "llm.max_cost_usd": "the spend cap: a stage it stops fails and runs again anyway",
    "llm.price": "cost accounting only",
    "llm.batch": "provider batch APIs: the same requests, answered later and cheaper",
    "llm.local.n_ctx": "the embedded server's context per slot",
    "llm.local.n_parallel": "the embedded server's slots",
    "llm.local.threads": "the embedded server's CPU threads",
    "llm.local.startup_timeout_s": "how long the embedded server may take to start",
    # Kept on purpose: model, base_url (another server may serve another model under the name), temperature,
    # max_tokens, max_tokens_cap, params, structured_mode, max_parse_retries (a re-ask can make a row),
    # cache_namespace (it asks for new samples).
    # coa: (factory/coa/config.py, factory/coa/tools/config.py). coa.task_timeout_s stays: a task it cuts
    # off is resumed by a rerun, so raising it is how a rerun is asked to finish those tasks; so do the code
    # tool's wall_s, cpu_s and memory_mb (a snippet's limits decide the observation the agent reads).
    "coa.parallel_tasks": "tasks run at the same time",
    "coa.tools.web_search.local.index_dir": "where the BM25 index is cached",
    "coa.tools.web_search.http.timeout_s": "a search API's patience",
    "coa.tools.web_search.http.max_retries": "a search API's retries",
    "coa.tools.web_search.http.backoff_s": "waits between a search API's retries",
    "coa.tools.web_search.http.backoff_max_s": "waits between a search API's retries",
    "coa.tools.web_search.http.api_key_env": "which variable holds the search API's key",
    "coa.tools.crawl_page.timeout_s": "a page fetch's patience",
    # pipeline.expand: (factory/synth/expand.py, factory/synth/closed_book.py)
    "pipeline.expand.closed_book.concurrency": "closed-book samples in flight at once",
    "pipeline.expand.closed_book.run_dir": "where the closed-book samples are cached",
    "pipeline.expand.closed_book.api_key_env": "which variable holds the key",
}


def without_how(data: dict[str, Any], root: str, as_root: str | None = None) -> dict[str, Any]:
    """A copy of `data`, the dump of the settings at dotted path `root`, less the HOW_NOT_WHAT fields under it;
    `as_root` reads the list for another root (an LLM section elsewhere is read as `llm`)."""
    data, prefix = copy.deepcopy(data), f"{as_root or root}."
    for path in HOW_NOT_WHAT:
        if not path.startswith(prefix):
            continue
        *parents, last = path[len(prefix) :].split(".")
        holder: Any = data
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            holder.pop(last, None)
    return data


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
