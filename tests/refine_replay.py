"""Replay a recorded set of capable-model replies to the refine prompts over loopback HTTP.

A replay set is a folder of JSON files, one per persona (see
benchmarks/data/refine_replay/README.md):

    {"persona_id": "p0123", "persona": "...",
     "replies": [{"stage": "script", "attempt": 0, "reply": {...}},
                 {"stage": "trajectory", "attempt": 0, "reply": {"steps": [...]}}]}

The server answers each chat request from the set, matched by stage (from the
response schema's name), persona (its text in a script request, its script's
task in a trajectory request) and attempt (the n-th request of that stage for
that persona), never by an exact prompt hash, so small prompt edits keep the
set usable. A request with no recording, or a schema-repair re-ask (the set
holds first answers only; it is told from a script retry, which also shows the
model's earlier reply, by the client's own repair message), gets an HTTP 400 naming what is missing, which the
pipeline records as a failed call. With `pending_dir`, such requests are also
written there as JSON, ready to be answered and added to the set.

    python tests/refine_replay.py DIR [PENDING]       # serve DIR; prints the base URL
    python tests/refine_replay.py show REQUEST [--schema] # a pending request, as the model reads it
    python tests/refine_replay.py check REQUEST REPLY     # the reply against the request's schema
    python tests/refine_replay.py merge DIR FOLDER...     # answered requests into the set
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from loopback_server import Action, LoopbackServer, completion, estimated_usage, serve_forever  # noqa: E402

from factory.prompts import load_prompt  # noqa: E402

STAGES = {"script": "script", "trajectory": "trajectory"}  # substring of the schema name -> stage


def load_replay_set(folder: str | Path) -> list[dict[str, Any]]:
    """Every recording of the set, sorted by persona id."""
    files = sorted(Path(folder).glob("*.json"))
    if not files:
        raise FileNotFoundError(f"{folder}: no recorded replies (*.json)")
    return [json.loads(f.read_text()) for f in files]


def write_personas(recordings: list[dict[str, Any]], path: str | Path) -> Path:
    """The set's personas as a JSONL file `factory refine` can read (ids kept)."""
    rows = [json.dumps({"id": r["persona_id"], "persona": r["persona"]}) for r in recordings]
    Path(path).write_text("\n".join(rows) + "\n")
    return Path(path)


def request_stage(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    name = ((fmt.get("json_schema") or {}).get("name") or "").lower()
    return next((stage for needle, stage in STAGES.items() if needle in name), name or None)


def repair_opening() -> str:
    """The fixed opening of the client's schema-repair message (prompts/llm/schema_feedback.md)."""
    return load_prompt("llm/schema_feedback").split("{error}")[0].strip()


def is_repair(body: dict[str, Any]) -> bool:
    """A schema-repair re-ask: a user turn after an assistant turn opens with the client's repair message.
    A script retry also follows the model's earlier reply, but with the refine feedback instead."""
    messages = body.get("messages") or []
    opening = repair_opening()
    return any(
        m.get("role") == "user" and str(m.get("content", "")).strip().startswith(opening)
        for before, m in zip(messages, messages[1:])
        if before.get("role") == "assistant"
    )


def _text(body: dict[str, Any], role: str) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages") or [] if m.get("role") == role)


def _tasks(recording: dict[str, Any]) -> list[str]:
    return [r["reply"]["task"] for r in recording["replies"] if r["stage"] == "script" and "task" in r["reply"]]


class ReplayServer(LoopbackServer):
    def __init__(self, recordings: list[dict[str, Any]], pending_dir: str | Path | None = None):
        super().__init__()
        self.recordings = recordings
        self.pending_dir = Path(pending_dir) if pending_dir else None
        self.asked: dict[tuple[str, str], int] = {}  # (stage, persona id) -> requests answered so far
        self.missing: list[str] = []
        self._count_lock = threading.Lock()

    def _persona(self, stage: str, body: dict[str, Any]) -> dict[str, Any] | None:
        user = _text(body, "user")
        if stage == "script":
            return next((r for r in self.recordings if r["persona"].strip() in user), None)
        return next((r for r in self.recordings if any(task in user for task in _tasks(r))), None)

    def _next_action(self, body: dict[str, Any]) -> Action:
        stage = request_stage(body)
        recording = self._persona(stage, body) if stage else None
        if recording is None:
            return self._missing(body, f"stage={stage} for an unknown persona")
        if is_repair(body):
            return self._missing(body, f"a schema-repair re-ask, stage={stage} persona={recording['persona_id']}")
        with self._count_lock:
            key = (stage, recording["persona_id"])
            attempt = self.asked.get(key, 0)
            self.asked[key] = attempt + 1
        reply = next(
            (r["reply"] for r in recording["replies"] if r["stage"] == stage and r["attempt"] == attempt), None
        )
        if reply is None:
            return self._missing(body, f"stage={stage} persona={recording['persona_id']} attempt={attempt}")
        return self._answer(body, json.dumps(reply))

    def _answer(self, body: dict[str, Any], content: str) -> Action:
        prompt = _text(body, "system") + _text(body, "user")
        reply = completion(content, usage=estimated_usage(prompt, content))
        return Action(body=json.dumps(reply), headers={"Content-Type": "application/json"})

    def _missing(self, body: dict[str, Any], what: str) -> Action:
        message = f"replay: no recorded reply for {what}"
        with self._count_lock:
            self.missing.append(message)
            if self.pending_dir:
                self.pending_dir.mkdir(parents=True, exist_ok=True)
                name = f"{len(self.missing):03d}_{what.replace(' ', '_').replace('=', '-')[:80]}.json"
                (self.pending_dir / name).write_text(json.dumps(body, indent=1))
        return Action(status=400, body=json.dumps({"error": {"message": message, "code": 400}}))


# --- recording: answering pending requests (benchmarks/data/refine_replay/RECORDING.md) ----------------------


def show(request: str, schema: bool = False) -> str:
    """A pending request as the model receives it: its messages, then (with `schema`) the reply's schema."""
    body = json.loads(Path(request).read_text())
    parts = [f"===== {m['role'].upper()} =====\n{m['content']}\n" for m in body["messages"]]
    if schema:
        parts.append(
            "===== REPLY JSON SCHEMA =====\n" + json.dumps(body["response_format"]["json_schema"]["schema"], indent=1)
        )
    return "\n".join(parts)


def check(request: str, reply: str) -> str:
    """The reply against the request's JSON schema: what constrained decoding would enforce, nothing more."""
    import jsonschema

    body = json.loads(Path(request).read_text())
    jsonschema.validate(json.loads(Path(reply).read_text()), body["response_format"]["json_schema"]["schema"])
    return "schema ok"


def merge(set_dir: str, *folders: str) -> list[str]:
    """Answered pending requests (`NAME.reply.json` beside each) into the set's files, by persona and attempt."""
    merged = []
    for folder in folders:
        for answer in sorted(Path(folder).glob("*.reply.json")):
            found = re.search(r"stage-(\w+)_persona-(\w+)_attempt-(\d+)", answer.name)
            stage, persona, attempt = found.group(1), found.group(2), int(found.group(3))
            path = Path(set_dir) / f"{persona}.json"
            recording = json.loads(path.read_text())
            replies = [r for r in recording["replies"] if (r["stage"], r["attempt"]) != (stage, attempt)]
            replies.append({"stage": stage, "attempt": attempt, "reply": json.loads(answer.read_text())})
            recording["replies"] = sorted(replies, key=lambda r: (r["stage"] != "script", r["attempt"]))
            path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n")
            merged.append(f"{persona} {stage} {attempt}")
    return merged


def main() -> None:
    command, *rest = sys.argv[1:]
    if command == "show":
        print(show(rest[0], "--schema" in rest))
    elif command == "check":
        print(check(*rest))
    elif command == "merge":
        print("\n".join(merge(*rest)))
    else:  # a set folder to serve, and optionally where unanswered requests go
        serve_forever(ReplayServer(load_replay_set(command), pending_dir=rest[0] if rest else None))


if __name__ == "__main__":
    main()
