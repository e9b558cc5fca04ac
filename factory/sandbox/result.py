"""Read what the parent saw (`RawOutcome`) as a `SandboxResult`.

The parent's own observations come first — it ran out of wall clock, it cut the
output, the kernel killed the child — because the child cannot be trusted to
report on those; the child's result records explain everything else.

The records are written by the runner, a process the generated code does not share
(child/runner.py): it asks the worker for each call with a nonce, takes one reply per
request, and writes "end" with reason "tampered" when the worker writes out of turn.
The parent still checks them — a run is "ok" only when the kernel's exit status agrees
(0), a record sequence that is not the runner's own (two ends, a call out of order, a
second "ready") is "error/tampered", a process that ends with status 0 before the
runner reports is an early exit — and reads them defensively: whatever their shape,
`make_result` returns a SandboxResult. What a reply can still carry is a value the code
chose to return, which is all a return value ever is: checkers compare it, in the
parent, with expected values that never enter the sandbox.
"""

from __future__ import annotations

import json
import signal

from .models import CallResult, SandboxLimits, SandboxResult
from .process import CappedBuffer, RawOutcome

CHILD_STATUSES = ("ok", "error", "timeout")  # rejected, killed and wall timeouts are the parent's to say
# pydantic refuses to serialise past 255 levels; a value that deep is no answer anyone checks.
MAX_VALUE_DEPTH = 100
ISOLATION_KEYS, ISOLATION_TEXT = 64, 200  # the runner writes a handful of short fields
TRUNCATION_MARKER = "\n[... output truncated at {cap} bytes]"


def text_of(buffer: CappedBuffer) -> str:
    text = buffer.data.decode("utf-8", errors="replace")
    return text + TRUNCATION_MARKER.format(cap=buffer.cap) if buffer.overflowed else text


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def parent_observation(raw: RawOutcome, limits: SandboxLimits) -> tuple[str, str, str] | None:
    """(status, reason, error) for what only the parent can know, or None."""
    name = signal_name(raw.returncode)
    if raw.timed_out:
        return "timeout", "wall", f"ran past the wall-clock limit of {limits.wall_s:g} s"
    if raw.scratch_exceeded:
        return (
            "error",
            "scratch",
            (f"wrote more than the scratch limit of {limits.scratch_mb} MiB or {limits.scratch_files} files"),
        )
    if raw.stdout.overflowed or raw.stderr.overflowed:
        return "killed", "output", f"printed more than the output limit of {limits.max_output_bytes} bytes"
    if name == "SIGXCPU":
        return "timeout", "cpu", f"ran past the CPU-time limit of {limits.cpu_s:g} s"
    if name == "SIGKILL":  # not ours: the kernel's OOM killer, or the hard CPU limit after an ignored SIGXCPU
        return "killed", "signal", "killed by SIGKILL (out of memory, or past the hard CPU limit)"
    if name:
        return "killed", "signal", f"killed by {name}"
    return None


def tampering(records: list[dict], n_calls: int) -> str | None:
    """Why `records` are not a sequence the runner writes, or None. The runner writes
    "ready", then "end", or "calls", one "call" per index in order, and "end"."""
    kinds = [record.get("kind") for record in records]
    if not kinds:
        return None  # died before a word: the exit status tells the rest
    body = kinds[1:]
    if body[:1] == ["calls"]:
        calls = body[1:-1] if body[-1:] == ["end"] and len(body) > 1 else body[1:]
        indexes = [record.get("index") for record in records[2 : 2 + len(calls)]]
        exact = all(type(i) is int for i in indexes)  # True == 1, but the runner writes ints
        in_order = all(kind == "call" for kind in calls) and exact and indexes == list(range(len(calls)))
        valid = in_order and len(calls) <= n_calls
    else:
        valid = body in ([], ["end"])
    return None if kinds[0] == "ready" and valid else "the code wrote to the sandbox's result channel"


def child_report(raw: RawOutcome) -> tuple[str, str | None, str | None]:
    end = next((r for r in reversed(raw.records) if r.get("kind") == "end"), None)
    if end is not None:
        status, reason, error = child_fields(end)
        if status == "ok" and raw.returncode != 0:
            return "error", "exit_code", f"the process exited with status {raw.returncode} after the code finished"
        return status, reason, error
    if raw.returncode == 0:
        return "error", "early_exit", "the process ended (status 0) before the sandbox could report: an early exit"
    last_line = text_of(raw.stderr).strip().splitlines()[-1:] or [""]
    if "MemoryError" in last_line[0]:
        return "error", "memory", "MemoryError: the memory limit was reached"
    detail = f": {last_line[0]}" if last_line[0] else ""
    return "error", "sandbox", f"the sandbox child ended (exit code {raw.returncode}) without a result{detail}"


def call_results(raw: RawOutcome, n_calls: int, status: str, reason: str | None, error: str | None) -> list[CallResult]:
    """One result per call. Where the child died mid-run, the first call without a
    record is the one it died in; the calls after it never ran."""
    done = {}
    for record in raw.records:
        index = record.get("index")
        if record.get("kind") == "call" and type(index) is int and 0 <= index < n_calls:  # not True, not 1.0
            done[index] = call_result(record)
    kinds = {record.get("kind") for record in raw.records}
    interrupted = "calls" in kinds and "end" not in kinds  # died after the module ran, before the end
    missing_status = "error" if status == "ok" else status
    results, blamed = [], False
    for index in range(n_calls):
        if index in done:
            results.append(done[index])
        elif interrupted and not blamed:
            blamed = True
            results.append(CallResult(index=index, status=missing_status, reason=reason, error=error))
        else:
            results.append(CallResult(index=index, status=missing_status, reason="not_run",
                                      error=f"not run: {error or 'the run ended first'}"))  # fmt: skip
    return results


def child_fields(record: dict) -> tuple[str, str | None, str | None]:
    """Status, reason and error from a record the child wrote — which the generated
    code could have forged, so nothing in it is trusted to be well formed."""
    status = record.get("status")
    status = status if status in CHILD_STATUSES else "error"
    reason, error = record.get("reason"), record.get("error")
    return status, str(reason)[:100] if reason else None, str(error)[:2000] if error else None


def depth_over(value: object, limit: int) -> bool:
    """Whether lists and dicts in `value` nest deeper than `limit` (no recursion: that is the point)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def call_result(record: dict) -> CallResult:
    status, reason, error = child_fields(record)
    try:
        value = json.loads(record["value_json"]) if "value_json" in record else None
        duration_s = float(record.get("duration_s", 0.0))
    except (TypeError, ValueError, RecursionError):  # RecursionError: a forged value nested past the parser
        return CallResult(index=record["index"], status="error", reason="sandbox", error="unreadable call record")
    if depth_over(value, MAX_VALUE_DEPTH):
        return CallResult(index=record["index"], status="error", reason="value", duration_s=duration_s,
                          error=f"the return value nests deeper than {MAX_VALUE_DEPTH} levels")  # fmt: skip
    return CallResult(
        index=record["index"], status=status, value=value, error=error, reason=reason, duration_s=duration_s
    )


def plain_isolation(isolation: object) -> dict:
    """The runner's report of its layers, cut to what it ever writes: short keys mapping to
    scalars, lists of scalars or one level of such a dict. Anything else is dropped."""
    if not isinstance(isolation, dict):
        return {}

    def scalar(value: object) -> bool:
        return (
            value is None
            or isinstance(value, (bool, int, float))
            or (isinstance(value, str) and len(value) <= ISOLATION_TEXT)
        )

    def flat(value: object) -> bool:
        return scalar(value) or (isinstance(value, list) and len(value) <= ISOLATION_KEYS and all(map(scalar, value)))

    kept = {}
    for key, value in list(isolation.items())[:ISOLATION_KEYS]:
        if not (isinstance(key, str) and len(key) <= ISOLATION_TEXT):
            continue
        if flat(value):
            kept[key] = value
        elif (
            isinstance(value, dict)
            and len(value) <= ISOLATION_KEYS
            and all(isinstance(k, str) and flat(v) for k, v in value.items())
        ):
            kept[key] = value
    return kept


def make_result(raw: RawOutcome, limits: SandboxLimits, n_calls: int = 0) -> SandboxResult:
    """Never raises: whatever the child wrote, the answer is a SandboxResult."""
    try:
        return read_result(raw, limits, n_calls)
    except Exception as exc:  # noqa: BLE001 - RecursionError, odd types: the records were not the runner's
        return SandboxResult(
            status="error",
            reason="sandbox",
            error=f"unreadable result records ({type(exc).__name__})",
            calls=[
                CallResult(index=i, status="error", reason="sandbox", error="unreadable result records")
                for i in range(n_calls)
            ],
            duration_s=raw.duration_s,
        )


def read_result(raw: RawOutcome, limits: SandboxLimits, n_calls: int) -> SandboxResult:
    observed = parent_observation(raw, limits)
    forged = tampering(raw.records, n_calls)
    status, reason, error = observed or (("error", "tampered", forged) if forged else child_report(raw))
    ready = next((r for r in raw.records if r.get("kind") == "ready"), {})
    if forged or reason == "tampered":  # the runner's own finding, or a record sequence not its own
        calls = [CallResult(index=i, status="error", reason="tampered", error=error) for i in range(n_calls)]
    else:
        calls = call_results(raw, n_calls, status, reason, error)
    return SandboxResult(
        status=status, reason=reason, error=error,
        stdout=text_of(raw.stdout), stderr=text_of(raw.stderr),
        stdout_truncated=raw.stdout.overflowed, stderr_truncated=raw.stderr.overflowed,
        calls=calls,
        exit_code=raw.returncode if raw.returncode is not None and raw.returncode >= 0 else None,
        signal=signal_name(raw.returncode), duration_s=raw.duration_s,
        isolation=plain_isolation(ready.get("isolation")),
    )  # fmt: skip
