"""Serve recorded simulator replies over loopback HTTP, so a recorded model runs the same client path.

A recorded set is one JSON file (benchmarks/data/simulator_replay/, docs/simulator.md says how it was
written):

    {"note": "...", "replies": [{"task": "...", "moves_before": 3, "action": "go(place=garden)",
                                 "prompt_sha256": "...", "reply": {"3_dm_thinking": ..., ...}}]}

A request is answered by the reply recorded for its task, the number of moves before it and the move
(read from the simulator's user message, prompts/envs/simulator_user.md), so a small prompt edit keeps the
set usable; `prompt_sha256` is the digest of the messages the reply answered, and the server counts the
requests whose messages have changed since (`stale`). A request with no recording gets an HTTP 400 (a
failed call: the simulator reports no verdict) and, with `pending_dir`, is written there to be answered.

    python tests/simulator_replay.py show PENDING_DIR          # the pending prompts, as the model reads them
    python tests/simulator_replay.py merge SET ANSWERS.json PENDING_DIR  # {pending file: reply} into the set
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from loopback_server import Action, LoopbackServer, completion, estimated_usage  # noqa: E402

MOVE = re.compile(r"^\d+\. ", re.M)


def prompt_sha(messages: list[dict[str, Any]]) -> str:
    shown = [{"role": m.get("role"), "content": m.get("content")} for m in messages]
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def prompt_key(messages: list[dict[str, Any]]) -> tuple[str, int, str]:
    """(task, moves before, move) from the simulator's user message."""
    user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    task = re.search(r"^Task: (.*)$", user, re.M)
    move = re.search(r"^The player's next move: (.*)$", user, re.M)
    history = user.split("Moves so far:", 1)[-1].split("The player's next move:", 1)[0]
    return (task.group(1) if task else "", len(MOVE.findall(history)), move.group(1) if move else "")


def entry_key(entry: dict[str, Any]) -> tuple[str, int, str]:
    return entry["task"], entry["moves_before"], entry["action"]


class SimulatorReplayServer(LoopbackServer):
    def __init__(self, recorded: str | Path, pending_dir: str | Path | None = None):
        super().__init__()
        path = Path(recorded)
        entries = json.loads(path.read_text())["replies"] if path.is_file() else []
        self.entries = {entry_key(e): e for e in entries}
        self.pending_dir = Path(pending_dir) if pending_dir else None
        self.answered, self.stale, self.missing = 0, 0, 0
        self._count_lock = threading.Lock()

    def _next_action(self, body: dict[str, Any]) -> Action:
        messages = body.get("messages") or []
        key = prompt_key(messages)
        entry = self.entries.get(key)
        with self._count_lock:
            if entry is None:
                self.missing += 1
                self._write_pending(key, messages)
                error = {"error": {"message": f"simulator replay: no recorded reply for {key}", "code": 400}}
                return Action(status=400, body=json.dumps(error))
            self.answered += 1
            self.stale += entry.get("prompt_sha256") != prompt_sha(messages)
        content = json.dumps(entry["reply"], ensure_ascii=False)
        prompt = " ".join(str(m.get("content", "")) for m in messages)
        reply = completion(content, usage=estimated_usage(prompt, content))
        return Action(body=json.dumps(reply), headers={"Content-Type": "application/json"})

    def _write_pending(self, key: tuple[str, int, str], messages: list[dict[str, Any]]) -> None:
        if self.pending_dir is None:
            return
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        request = {"task": key[0], "moves_before": key[1], "action": key[2], "prompt_sha256": prompt_sha(messages),
                   "messages": messages}  # fmt: skip
        task = re.sub(r"[^a-z]+", "_", key[0].lower())[:40]  # named so a listing reads case by case, move by move
        name = f"{task}_{key[1]:02d}_{request['prompt_sha256'][:8]}.json"
        (self.pending_dir / name).write_text(json.dumps(request, indent=1, ensure_ascii=False))


def show(pending_dir: str) -> str:
    parts = []
    for path in sorted(Path(pending_dir).glob("*.json")):
        user = next(m["content"] for m in json.loads(path.read_text())["messages"] if m["role"] == "user")
        parts.append(f"===== {path.name} =====\n{user}\n")
    return "\n".join(parts)


def merge(recorded: str, answers: str, pending_dir: str) -> int:
    """Add the answers ({pending file name: reply}) to the set, keyed as their requests were."""
    path = Path(recorded)
    data = json.loads(path.read_text()) if path.is_file() else {"note": "", "replies": []}
    for name, reply in json.loads(Path(answers).read_text()).items():
        request = json.loads((Path(pending_dir) / name).read_text())
        data["replies"].append({**{k: v for k, v in request.items() if k != "messages"}, "reply": reply})
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return len(data["replies"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["show"]:
        print(show(sys.argv[2]))
    elif sys.argv[1:2] == ["merge"]:
        print(merge(sys.argv[2], sys.argv[3], sys.argv[4]), "replies in the set")
    else:
        sys.exit(__doc__)
