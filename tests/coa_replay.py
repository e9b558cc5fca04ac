"""Record and replay a capable model's replies to the Chain-of-Agents prompts over loopback HTTP.

A replay set is a folder (benchmarks/data/coa_replay/<name>/, README there): `set.json`
says how the runs were configured (tools, corpus), and one JSON file per task holds the
task and every reply the model gave, in order, per role:

    {"task": {the task row as a task file holds it: plain QA or verl/AFM},
     "question": "the question as the prompts show it (factory.tasks reads it from the row)",
     "replies": [{"role": "planner", "n": 0, "reply": {"think": ..., "steps": [...]}}, ...]}

The server answers a chat request by (task, role, n): the task whose question the prompt
holds, the role from the system prompt's opening line, and n, the requests of that role
for that task so far. It never matches an exact prompt, so prompt edits keep a set usable;
a request with no recording gets an HTTP 400 naming it (the run records a failed call).

Recording (`record`): requests without a reply are written to a pending folder, and the
server waits until a reply file appears beside it (`<name>.reply.json`, checked against
the request's own JSON schema; a bad one is refused in `<name>.error.txt`), adds it to the
set and answers. Whoever answers reads the real prompt (`show`), as the model would:

    python tests/coa_replay.py record SET --tasks tasks.jsonl --pending /tmp/pending --run-dir /tmp/rec
    python tests/coa_replay.py pending /tmp/pending       # requests waiting for a reply
    python tests/coa_replay.py show /tmp/pending/<name>.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
from aiohttp import web

sys.path.insert(0, str(Path(__file__).parent))
from loopback_server import LoopbackServer, completion, estimated_usage  # noqa: E402

ROLE_MARKERS = {  # the opening of each role's system prompt (prompts/coa/<role>.md, crawl_summary.md)
    "Your step now: PLAN.": "planner",
    "Your step now: ONE TOOL CALL.": "search_agent",
    "Your step now: RUN CODE.": "code_agent",
    "Your step now: REFLECT.": "reflector",
    "Your step now: SUGGEST AN ANSWER.": "answerer",
    "Your step now: DOUBLE-CHECK.": "verifier",
    "Summarise a web page for a reader": "summarizer",
    "Answer the question. Think it through briefly": "policy",  # the closed-book pass (prompts/passrate/)
}
CLOSED_BOOK = "replay-closed-book"  # the rollouts label of the closed-book pass
WAIT_S = 3 * 3600  # how long a recording request waits for its reply


def load_set(folder: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the set's settings, its recordings sorted by task id)."""
    folder = Path(folder)
    settings = json.loads((folder / "set.json").read_text()) if (folder / "set.json").exists() else {}
    recordings = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json")) if path.name != "set.json"]
    return settings, sorted(recordings, key=lambda r: str(r["task"]["id"]))


def write_tasks(recordings: list[dict[str, Any]], path: str | Path) -> Path:
    Path(path).write_text("".join(json.dumps(r["task"]) + "\n" for r in recordings))
    return Path(path)


def file_name(task_id: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(task_id)) + ".json"


def role_of(body: dict[str, Any]) -> str | None:
    system = next((m["content"] for m in body.get("messages") or [] if m.get("role") == "system"), "")
    text = system or str((body.get("messages") or [{}])[-1].get("content", ""))
    return next((role for marker, role in ROLE_MARKERS.items() if text.lstrip().startswith(marker)), None)


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if m.get("role") == "user")


class CoaReplayServer(LoopbackServer):
    def __init__(self, folder: str | Path, pending_dir: str | Path | None = None):
        super().__init__()
        self.folder = Path(folder)
        self.settings, self.recordings = load_set(self.folder)
        self.pending_dir = Path(pending_dir) if pending_dir else None  # set: record what is missing
        self.asked: dict[tuple[str, str], int] = {}
        self.missing: list[str] = []
        self._count_lock = threading.Lock()

    def recording_for(self, body: dict[str, Any]) -> dict[str, Any] | None:
        text = user_text(body)
        found = [r for r in self.recordings if r["question"].strip() in text]
        return max(found, key=lambda r: len(r["question"]), default=None)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        with self._lock:
            self.requests.append({"body": body, "hash": None, "time": time.monotonic()})
        role, recording = role_of(body), self.recording_for(body)
        if role is None or recording is None:
            return self.refuse(f"a request for an unknown role or task (role {role})")
        with self._count_lock:
            key = (str(recording["task"]["id"]), role)
            n = self.asked.get(key, 0)
            self.asked[key] = n + 1
        reply = next((r["reply"] for r in recording["replies"] if r["role"] == role and r["n"] == n), None)
        if reply is None and self.pending_dir is not None:
            reply = await self.wait_for_reply(body, recording, role, n)
        if reply is None:
            return self.refuse(f"task={recording['task']['id']} role={role} n={n}")
        free_text = not body.get("response_format") and set(reply) == {"text"}  # a free-text request
        content = reply["text"] if free_text else json.dumps(reply, ensure_ascii=False)
        prompt = "".join(str(m.get("content", "")) for m in body.get("messages") or [])
        return web.json_response(completion(content, usage=estimated_usage(prompt, content)))

    def refuse(self, what: str) -> web.Response:
        message = f"replay: no recorded reply for {what}"
        with self._count_lock:
            self.missing.append(message)
        return web.json_response({"error": {"message": message, "code": 400}}, status=400)

    async def wait_for_reply(self, body: dict, recording: dict, role: str, n: int) -> dict | None:
        stem = f"{file_name(recording['task']['id'])[:-5]}__{role}__{n}"
        pending = self.pending_dir / f"{stem}.json"
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        pending.write_text(json.dumps(body, indent=1, ensure_ascii=False))
        answer, error = pending.with_suffix(".reply.json"), pending.with_suffix(".error.txt")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            if not answer.exists():
                continue
            reply, problem = read_reply(answer, schema)
            if problem:
                error.write_text(problem + "\n")
                answer.unlink()
                continue
            error.unlink(missing_ok=True)
            self.save(recording, role, n, reply)
            pending.rename(pending.with_suffix(".done.json"))
            answer.rename(answer.with_suffix(".done"))
            return reply
        return None

    def save(self, recording: dict, role: str, n: int, reply: dict) -> None:
        with self._count_lock:
            recording["replies"].append({"role": role, "n": n, "reply": reply})
            path = self.folder / file_name(recording["task"]["id"])
            path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")


def read_reply(path: Path, schema: dict | None) -> tuple[dict | None, str | None]:
    try:
        reply = json.loads(path.read_text())
        if schema:
            jsonschema.validate(reply, schema)
        return reply, None
    except (ValueError, jsonschema.ValidationError) as exc:
        return None, f"refused: {' '.join(str(exc).split())[:600]}"


def replay_config(settings: dict, tasks: Path, run_dir: Path, base_url: str, count: int, recording: bool) -> dict:
    """The factory config of a replayed (or recording) coa run: the set's tools, every task, no cache."""
    llm = {"model": "replay", "base_url": base_url, "cache": False, "max_parse_retries": 0, "max_retries": 0,
           "timeout_s": WAIT_S + 60 if recording else 60}  # fmt: skip
    coa = {"tasks": str(tasks), "count": count, "parallel_tasks": 32, **json.loads(json.dumps(settings.get("coa", {})))}
    local = coa.get("tools", {}).get("web_search", {}).get("local")
    if local and local.get("path") == "geo":  # the shipped corpus, built from the pinned packages' facts
        from factory.corpus import resolve_corpus

        local["path"] = str(resolve_corpus("geo"))
    if recording:
        coa["task_timeout_s"] = WAIT_S * 4
    return {"run_dir": str(run_dir), "llm": llm, "coa": coa}


def show(path: Path) -> str:
    """A pending request as the model reads it: the messages, then the keys its reply must have."""
    body = json.loads(path.read_text())
    parts = [f"=== {m['role']}\n{m['content']}" for m in body["messages"]]
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    if schema:
        parts.append("=== reply schema\n" + json.dumps(schema.get("properties", schema), indent=1))
    else:
        parts.append('=== free text: write the reply as {"text": "<the whole reply>"}')
    return "\n\n".join(parts)


def record(args: argparse.Namespace) -> None:
    from factory.coa import run_coa
    from factory.rows import json_rows
    from factory.run_config import FactoryConfig
    from factory.tasks import load_tasks

    folder = Path(args.set)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [row for _, row in json_rows(Path(args.tasks))[1]]
    for row, task in zip(rows, load_tasks(args.tasks)):
        path = folder / file_name(row["id"])
        if not path.exists():
            recording = {"task": row, "question": task.question, "replies": []}
            path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
    server = CoaReplayServer(folder, pending_dir=args.pending)
    base_url = server.start_in_thread()
    tasks = write_tasks(server.recordings, Path(args.run_dir).with_suffix(".tasks.jsonl"))
    config = replay_config(server.settings, tasks, Path(args.run_dir), base_url, len(server.recordings), True)
    closed_book(server.recordings, tasks, base_url, Path(args.run_dir).with_suffix(".closed"))  # before any tool
    outcome = run_coa(FactoryConfig.model_validate(config), progress=False)
    print(json.dumps({"funnel": outcome.funnel, "failures": outcome.failures}))
    server.stop()


def closed_book(recordings: list[dict], tasks: Path, base_url: str, run_dir: Path) -> list[dict]:
    """One no-tool answer per qa task (the closed-book gate's question, factory/synth/closed_book.py), asked
    before the task's own run so that no observation can inform it; one pass-rate row per task."""
    from factory.llm import LLMConfig
    from factory.passrate.rates import pass_rates
    from factory.passrate.sampler import ensure_rollouts
    from factory.store import Store
    from factory.tasks import load_tasks

    qa = [task for task in load_tasks(tasks) if task.domain == "qa"]
    llm = LLMConfig(model="replay", base_url=base_url, cache=False, max_retries=0, timeout_s=WAIT_S + 60)
    with Store.open(run_dir) as store:
        ensure_rollouts(store, qa, llm, n=1, model_label=CLOSED_BOOK, temperature=0.0, max_tokens=1024)
        return pass_rates(store, CLOSED_BOOK, [task.id for task in qa]).to_pylist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="run the tasks; requests without a reply wait in --pending")
    rec.add_argument("set")
    rec.add_argument("--tasks", required=True, help="JSONL of tasks to add to the set (existing ones are kept)")
    rec.add_argument("--pending", required=True)
    rec.add_argument("--run-dir", required=True)
    commands.add_parser("pending", help="list the requests waiting for a reply").add_argument("pending")
    commands.add_parser("show", help="print a pending request as the model reads it").add_argument("file")
    args = parser.parse_args()
    if args.command == "record":
        record(args)
    elif args.command == "pending":
        waiting = sorted(
            p for p in Path(args.pending).glob("*.json") if not p.name.endswith((".reply.json", ".done.json"))
        )
        print("\n".join(str(p) for p in waiting if not p.with_suffix(".reply.json").exists()))
    else:
        print(show(Path(args.file)))


if __name__ == "__main__":
    main()
