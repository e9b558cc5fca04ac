"""The math-verify worker: run as a script in a process of its own by math_answer.py.

Why a process: math-verify bounds parsing and verification with SIGALRM, which
only works on a process's main thread (off it, `parse` raises), and sympy can
still hang in C code an alarm never interrupts. Here the calls always run on the
main thread, and the parent kills this process when a reply is overdue.

Protocol, one JSON object per line: in {"golds": [latex], "answer": text,
"timeout_s": int}, out {"equal": bool, "detail": str, "error": str | null}.
It imports nothing of factory, so it starts quickly and on its own.
"""

from __future__ import annotations

import importlib
import json
import os
import sys


def short(parsed: list) -> str:
    return str(parsed[0])[:60] if parsed else "?"


def judge(golds: list[str], answer: str, timeout_s: int) -> dict:
    from math_verify import parse, verify

    answer_parsed = parse(answer, parsing_timeout=timeout_s)
    if not answer_parsed:
        return {"equal": False, "detail": "no math answer found in the reply", "error": None}
    gold_parsed = [parse(gold, parsing_timeout=timeout_s) for gold in golds]
    if not any(gold_parsed):
        return {"equal": False, "detail": "the reference answer does not parse", "error": "reference unparsable"}
    for gold in filter(None, gold_parsed):
        if verify(gold, answer_parsed, timeout_seconds=timeout_s):
            return {"equal": True, "detail": f"{short(answer_parsed)} = {short(gold)}", "error": None}
    return {"equal": False, "detail": f"{short(answer_parsed)} != {short(gold_parsed[0])}", "error": None}


def main() -> None:
    # The protocol gets its own copy of stdout; anything the libraries print goes to stderr.
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    importlib.import_module("math_verify")  # before "ready", so the first job is not slow

    protocol.write('{"ready": true}\n')
    for line in sys.stdin:
        try:
            job = json.loads(line)
            reply = judge(job["golds"], job["answer"], int(job["timeout_s"]))
        except Exception as exc:  # one bad job must not end the worker
            reply = {"equal": False, "detail": "math-verify failed", "error": f"{type(exc).__name__}: {exc}"[:200]}
        protocol.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
