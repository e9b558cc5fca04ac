"""Math answers: equivalence by math-verify, run in worker processes (see math_worker.py).

    checker = MathAnswer()
    checker.check("... <answer>\\boxed{0.5}</answer>", task)   # task.answers == ["\\frac{1}{2}"]

The reply's last \\boxed{...} is the answer (the AFM grammar puts it in <answer>);
without one, math-verify looks for the last expression in the answer text.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import queue
import select
import subprocess
import sys
import threading
from pathlib import Path

from ..tasks import Task
from .base import Checker, CheckError, CheckResult, failure
from .extract import final_answer, last_boxed

WORKER_SCRIPT = Path(__file__).with_name("math_worker.py")
STARTUP_S = 60.0  # importing sympy on a loaded machine can take a while


class VerifyWorker:
    """One math-verify process, used by one thread at a time; replaced when it dies or hangs."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def ask(self, job: dict, deadline_s: float) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.start()
        try:
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
        except OSError:  # it died since the poll above
            self.stop()
            return {"equal": False, "detail": "math-verify worker died", "error": "worker died"}
        line = self.read_line(deadline_s)
        if not line:
            self.stop()  # hung (sympy in C code, beyond its alarm) or crashed: the next job gets a fresh one
            return {"equal": False, "detail": "math-verify timed out", "error": f"no reply in {deadline_s:.0f}s"}
        return json.loads(line)

    def start(self) -> None:
        # -I: the worker needs only math-verify from site-packages, nothing from cwd or the environment.
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(WORKER_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1,
        )  # fmt: skip
        if not self.read_line(STARTUP_S):
            self.stop()
            raise CheckError(f"the math-verify worker did not start within {STARTUP_S:.0f}s")

    def read_line(self, timeout_s: float) -> str:
        """One reply line, or "" when none came in time (or the worker exited)."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        return self.process.stdout.readline() if ready else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):  # a write still buffered for the dead worker
                    pipe.close()
            self.process = None


class WorkerPool:
    """Up to `size` workers, started on demand, each lent to one caller at a time."""

    def __init__(self, size: int):
        self.size = size
        self.idle: queue.SimpleQueue[VerifyWorker] = queue.SimpleQueue()
        self.workers: list[VerifyWorker] = []
        self.lock = threading.Lock()

    def ask(self, job: dict, deadline_s: float) -> dict:
        worker = self.take()
        try:
            return worker.ask(job, deadline_s)
        finally:
            self.idle.put(worker)

    def take(self) -> VerifyWorker:
        with self.lock:
            if self.idle.empty() and len(self.workers) < self.size:
                self.workers.append(VerifyWorker())
                return self.workers[-1]
        return self.idle.get()

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


class MathAnswer(Checker):
    name = "math"

    def __init__(self, workers: int = 2, timeout_s: int = 5):
        if importlib.util.find_spec("math_verify") is None:
            raise CheckError("the math checker needs math-verify: pip install math-verify")
        self.pool = WorkerPool(workers)
        self.timeout_s = timeout_s

    def check(self, prediction: str, task: Task) -> CheckResult:
        if not task.answers:
            return failure(f"task {task.id} has no reference answer")
        text = final_answer(prediction)
        boxed = last_boxed(text)
        if boxed is not None and any(same_text(boxed, gold) for gold in task.answers):
            return CheckResult(correct=True, score=1.0, detail=f"{boxed[:60]} (same text)")
        if not (boxed or text):
            return CheckResult(correct=False, score=0.0, detail="empty answer")
        job = {
            "golds": [f"\\boxed{{{gold}}}" for gold in task.answers],
            "answer": f"\\boxed{{{boxed}}}" if boxed is not None else text,
            "timeout_s": self.timeout_s,
        }
        # Parse answer and each gold, then verify: each step bounded in the worker, plus slack.
        reply = self.pool.ask(job, deadline_s=self.timeout_s * (2 + 2 * len(task.answers)) + 5)
        equal = bool(reply["equal"])
        return CheckResult(correct=equal, score=float(equal), detail=reply["detail"], error=reply.get("error"))

    async def acheck(self, prediction: str, task: Task) -> CheckResult:
        return await asyncio.to_thread(self.check, prediction, task)  # waits on a pipe: off the event loop

    def close(self) -> None:
        self.pool.close()


def same_text(answer: str, gold: str) -> bool:
    """Equal up to spaces and \\left/\\right: a quick yes without asking sympy."""

    def squeeze(text: str) -> str:
        return "".join(text.replace("\\left", "").replace("\\right", "").split())

    return squeeze(answer) == squeeze(gold)
