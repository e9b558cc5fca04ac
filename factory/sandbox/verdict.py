"""Read what the parent saw (`RawOutcome`) as a `Verdict`.

The parent's own observations come first — it ran out of wall clock, it cut the
output, the kernel killed the child — because the child cannot be trusted to
report on those; the child's result records explain everything else.
"""

from __future__ import annotations

import json
import signal

from .models import CallVerdict, SandboxLimits, Verdict
from .process import CappedBuffer, RawOutcome

CHILD_STATUSES = ("ok", "error", "timeout")  # rejected, killed and wall timeouts are the parent's to say
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
    if raw.stdout.overflowed or raw.stderr.overflowed:
        return "killed", "output", f"printed more than the output limit of {limits.max_output_bytes} bytes"
    if name == "SIGXCPU":
        return "timeout", "cpu", f"ran past the CPU-time limit of {limits.cpu_s:g} s"
    if name == "SIGKILL":  # not ours: the kernel's OOM killer, or the hard CPU limit after an ignored SIGXCPU
        return "killed", "signal", "killed by SIGKILL (out of memory, or past the hard CPU limit)"
    if name:
        return "killed", "signal", f"killed by {name}"
    return None


def child_report(raw: RawOutcome) -> tuple[str, str | None, str | None]:
    end = next((r for r in reversed(raw.records) if r.get("kind") == "end"), None)
    if end is not None:
        return child_fields(end)
    last_line = text_of(raw.stderr).strip().splitlines()[-1:] or [""]
    if "MemoryError" in last_line[0]:
        return "error", "memory", "MemoryError: the memory limit was reached"
    detail = f": {last_line[0]}" if last_line[0] else ""
    return "error", "sandbox", f"the sandbox child ended (exit code {raw.returncode}) without a result{detail}"


def call_verdicts(
    raw: RawOutcome, n_calls: int, status: str, reason: str | None, error: str | None
) -> list[CallVerdict]:
    """One verdict per call. Where the child died mid-run, the first call without a
    record is the one it died in; the calls after it never ran."""
    done = {}
    for record in raw.records:
        index = record.get("index")
        if record.get("kind") == "call" and isinstance(index, int) and 0 <= index < n_calls:
            done[index] = call_verdict(record)
    kinds = {record.get("kind") for record in raw.records}
    interrupted = "calls" in kinds and "end" not in kinds  # died after the module ran, before the end
    missing_status = "error" if status == "ok" else status
    verdicts, blamed = [], False
    for index in range(n_calls):
        if index in done:
            verdicts.append(done[index])
        elif interrupted and not blamed:
            blamed = True
            verdicts.append(CallVerdict(index=index, status=missing_status, reason=reason, error=error))
        else:
            verdicts.append(CallVerdict(index=index, status=missing_status, reason="not_run",
                                        error=f"not run: {error or 'the run ended first'}"))  # fmt: skip
    return verdicts


def child_fields(record: dict) -> tuple[str, str | None, str | None]:
    """Status, reason and error from a record the child wrote — which the generated
    code could have forged, so nothing in it is trusted to be well formed."""
    status = record.get("status")
    status = status if status in CHILD_STATUSES else "error"
    reason, error = record.get("reason"), record.get("error")
    return status, str(reason)[:100] if reason else None, str(error)[:2000] if error else None


def call_verdict(record: dict) -> CallVerdict:
    status, reason, error = child_fields(record)
    try:
        value = json.loads(record["value_json"]) if "value_json" in record else None
        duration_s = float(record.get("duration_s", 0.0))
    except (TypeError, ValueError):
        return CallVerdict(index=record["index"], status="error", reason="sandbox", error="unreadable call record")
    return CallVerdict(
        index=record["index"], status=status, value=value, error=error, reason=reason, duration_s=duration_s
    )


def make_verdict(raw: RawOutcome, limits: SandboxLimits, n_calls: int = 0) -> Verdict:
    observed = parent_observation(raw, limits)
    status, reason, error = observed or child_report(raw)
    ready = next((r for r in raw.records if r.get("kind") == "ready"), {})
    isolation = ready.get("isolation")
    return Verdict(
        status=status, reason=reason, error=error,
        stdout=text_of(raw.stdout), stderr=text_of(raw.stderr),
        stdout_truncated=raw.stdout.overflowed, stderr_truncated=raw.stderr.overflowed,
        calls=call_verdicts(raw, n_calls, status, reason, error),
        exit_code=raw.returncode if raw.returncode is not None and raw.returncode >= 0 else None,
        signal=signal_name(raw.returncode), duration_s=raw.duration_s,
        isolation=isolation if isinstance(isolation, dict) else {},
    )  # fmt: skip
