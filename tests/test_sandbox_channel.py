"""What the sandbox's verdict rests on when the code holds the Python layer: the result
records are written by the runner, which the code does not share; what the code writes to
its fds reaches the runner out of turn (tampered) or nothing; the code cannot reach the
parent's memory or signal it; and no shape of records raises in the parent.
Also the code-task profile: livecodebench's prelude, its recursion limit, stdin via sys/io."""

import ast
import json
import os
import struct

import pytest

from factory.sandbox import (
    CODE_TASK_IMPORTS,
    CONTEST_PRELUDE,
    SandboxLimits,
    run_function,
    run_program,
    sandbox_capabilities,
)  # fmt: skip

CAPS = sandbox_capabilities()
CODE = SandboxLimits(cpu_s=5, wall_s=8, memory_mb=512, allowed_imports=CODE_TASK_IMPORTS)
OS = "import sys\nOS = sys.modules['os']\nC = sys.modules['ctypes']\n"  # the runner loaded both
RECORDS = (
    b'{"kind": "calls"}\n{"kind": "call", "index": 0, "status": "ok", "value_json": "42"}\n'
    b'{"kind": "end", "status": "ok"}\n'
)
FORGE = (
    OS
    + f"""
def forge():
    for fd in range(3, 64):
        try:
            OS.write(fd, {RECORDS!r})
        except OSError:
            pass
"""
)


def test_a_program_may_exit_cleanly_but_not_end_the_process_early():
    clean = run_program("import sys\nprint(1)\nsys.exit()\nprint(2)", limits=CODE)
    assert (clean.status, clean.stdout, clean.exit_code) == ("ok", "1\n", 0)
    early = run_program(OS + "print(1, flush=True)\nOS._exit(0)", limits=CODE)
    assert (early.status, early.reason, early.exit_code, early.stdout) == ("error", "early_exit", 0, "1\n")


def test_success_needs_the_exit_status_too():
    # The runner reports "ok", then an atexit handler ends the process with status 3.
    source = (
        OS + "B = sys.modules['builtins']\nimp = B.getattr(B, '_' * 2 + 'import' + '_' * 2)\n"
        "imp('atexit').register(lambda: OS._exit(3))\nprint('done')"
    )
    verdict = run_program(source, limits=CODE)
    assert (verdict.status, verdict.reason, verdict.exit_code) == ("error", "exit_code", 3), verdict


def test_forged_records_are_tampering_and_cannot_make_a_run_ok():
    """The worker holds no result file: what it writes to its fds reaches the runner's pipe
    (or nothing), out of turn, so the run is tampered — before the calls, during one, or alone
    followed by os._exit(0), which once passed for a clean run returning 42."""
    for source in (
        FORGE + "forge()\ndef f():\n    return 0\n",
        FORGE + "def f():\n    forge()\n    return 0\n",
        FORGE + "forge()\nOS._exit(0)\n",
    ):
        verdict = run_function(source, "f", [[]], CODE)
        assert (verdict.status, verdict.reason, verdict.calls[0].reason) == ("error", "tampered", "tampered"), verdict
        assert verdict.calls[0].value is None and verdict.isolation["result_channel"] is True


def framed(*messages: dict) -> bytes:
    return b"".join(struct.pack(">I", len(body)) + body for body in (json.dumps(m).encode() for m in messages))


def test_well_formed_messages_written_ahead_are_tampering():
    """Even in the channel's own framing: the runner asks for call 0 only after the module is
    defined, and finds a reply already waiting."""
    ahead = framed({"kind": "calls"}, {"kind": "call", "index": 0, "status": "ok", "value_json": "42"})
    source = FORGE.replace(repr(RECORDS), repr(ahead)) + "forge()\ndef f():\n    return 0\n"
    verdict = run_function(source, "f", [[]], CODE)
    assert (verdict.status, verdict.reason) == ("error", "tampered") and verdict.calls[0].value is None, verdict
    assert "before it was asked" in verdict.error or "out of turn" in verdict.error


def test_with_the_result_channel_switched_off_the_forgery_works(monkeypatch):
    """The layer proves itself: the test-only knob puts the code back in the same process as
    the result file, and a complete forged sequence then passes for a clean run."""
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "result_channel")
    alone = run_function(FORGE + "forge()\nOS._exit(0)\n", "f", [[]], CODE)
    assert (alone.status, alone.calls[0].value) == ("ok", 42)
    assert alone.isolation["disabled"] == ["result_channel"] and alone.isolation["result_channel"] is False


@pytest.mark.parametrize("exit_call", ["raise SystemExit(0)", "raise SystemExit", "import sys\nsys.exit()"])
def test_a_module_to_be_called_may_not_exit_while_defined(exit_call):
    verdict = run_function(f"def f():\n    return 1\n{exit_call}\n", "f", [[]], CODE)
    assert (verdict.status, verdict.reason) == ("error", "exit_code") and verdict.calls[0].reason == "not_run"
    inside = run_function(f"def f():\n    {exit_call.replace(chr(10), '; ')}\n", "f", [[]], CODE)
    assert (inside.calls[0].status, inside.calls[0].reason) == ("error", "exit_code")


@pytest.mark.skipif(not CAPS["seccomp"], reason="no seccomp filter for this machine")
def test_the_parents_memory_and_signals_are_out_of_reach():
    source = (
        OS
        + """
libc = C.CDLL(None, use_errno=True)
class IoVec(C.Structure):
    _fields_ = [("base", C.c_void_p), ("size", C.c_size_t)]
buf = C.create_string_buffer(64)
local, remote = IoVec(C.cast(buf, C.c_void_p), 64), IoVec(4096 * 16, 64)
parent = OS.getppid()
results = {}
results["process_vm_readv"] = libc.process_vm_readv(parent, C.byref(local), 1, C.byref(remote), 1, 0), C.get_errno()
results["sigqueue"] = libc.sigqueue(parent, 15, C.c_void_p(0)), C.get_errno()
pidfd = libc.syscall(434, parent, 0)  # pidfd_open is allowed; signalling through it is not
results["pidfd_send_signal"] = libc.syscall(424, pidfd, 15, None, 0), C.get_errno()
results["kill"] = libc.kill(parent, 15), C.get_errno()
print(results)
"""
    )
    verdict = run_program(source, limits=CODE)
    assert verdict.status == "ok", verdict
    results = ast.literal_eval(verdict.stdout)
    assert all(ret == -1 and errno in (1, 13) for ret, errno in results.values()), results  # EPERM / EACCES
    assert os.getpid()  # and the parent is here to say so


def test_the_contest_prelude_and_recursion_limit():
    limits = CODE.model_copy(update={"preloaded_modules": CONTEST_PRELUDE, "recursion_limit": 100_000})
    source = (
        "print(pow(3, 4, 5), gcd(12, 18), bisect_left([1, 3], 2), heappop([1]), deque([1]).pop(), exit is not None)\n"
        "def down(n):\n    return 0 if n == 0 else 1 + down(n - 1)\nprint(down(50_000))\n"
        "print(sum(map(int, sys.stdin.buffer.read().split())), type(io.StringIO()).__name__)"
    )
    verdict = run_program(source, stdin="1 2 3\n", limits=limits)
    assert verdict.status == "ok", verdict
    assert verdict.stdout.splitlines() == ["1 6 1 1 1 True", "50000", "6 StringIO"]
    assert run_program("print(open)", limits=limits).status == "rejected"  # io.open is not preloaded as open
    with pytest.raises(ValueError, match="preloaded_modules not in allowed_imports: sys"):
        SandboxLimits(preloaded_modules=("sys",))


def test_a_record_nested_past_the_parser_is_unreadable_not_a_crash_in_the_parent(monkeypatch):
    deep = "'[' * 200000 + ']' * 200000"
    record = '\'{"kind": "call", "index": 0, "status": "ok", "value_json": "\' + ' + deep + " + '\"}\\n'"
    whole = '\'{"kind": "end", "x": \' + ' + deep + " + '}\\n'"
    source = FORGE.replace(repr(RECORDS), "(" + '\'{"kind": "calls"}\\n\' + ' + record + " + " + whole + ").encode()")
    verdict = run_function(source + "forge()\nOS._exit(0)\n", "f", [[]], CODE)
    assert (verdict.status, verdict.reason) == ("error", "tampered"), verdict  # through the runner's pipe
    monkeypatch.setenv("FACTORY_SANDBOX_DISABLE", "result_channel")  # straight into the result file
    verdict = run_function(source + "forge()\nOS._exit(0)\n", "f", [[]], CODE)
    assert (verdict.calls[0].status, verdict.calls[0].error) == ("error", "unreadable call record"), verdict


def raw_outcome(records: list, returncode: int = 0):
    from factory.sandbox.process import CappedBuffer, RawOutcome

    return RawOutcome(returncode=returncode, stdout=CappedBuffer(100), stderr=CappedBuffer(100), timed_out=False,
                      duration_s=0.1, records=records)  # fmt: skip


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("records", [
    [{"kind": "ready", "isolation": json_deep} for json_deep in [__import__("json").loads(nested(900))]],
    [{"kind": "ready", "isolation": {"x": {"y": {"z": 1}}}}, {"kind": "end", "status": "ok"}],
    [{"kind": "ready", "isolation": "seccomp: true"}, {"kind": "end", "status": {"ok": 1}}],
    [{"kind": ["ready"]}, {"kind": {"end": 1}}],
    [{"kind": "ready"}, {"kind": "calls"}, {"kind": "call", "index": True, "status": "ok", "value_json": "1"}],
    [{"kind": "ready"}, {"kind": "calls"}, {"kind": "call", "index": 0, "status": "ok", "value_json": nested(5000)}],
    [{"kind": "ready"}, {"kind": "calls"}, {"kind": "call", "index": 0, "status": "ok", "value_json": nested(300)}],
    [{"kind": "ready"}, {"kind": "calls"}, {"kind": "call", "index": 0, "status": 7, "value_json": 7,
                                             "duration_s": "soon", "error": ["x"] * 10, "reason": {}}],
])  # fmt: skip
def test_whatever_the_records_say_the_parent_answers_with_a_verdict(records):
    """The records are the child's (or a forger's) to write: no shape of them raises in the parent,
    and what comes back is a SandboxResult that serialises."""
    from factory.sandbox.result import make_result

    verdict = make_result(raw_outcome(records), SandboxLimits(), n_calls=1)
    assert verdict.status in ("ok", "error") and len(verdict.calls) == 1
    verdict.model_dump_json()  # pydantic's own depth limit (255) is never reached
    assert all(
        not isinstance(v, dict) or all(not isinstance(x, dict) for x in v.values()) for v in verdict.isolation.values()
    )


def test_a_value_nested_past_100_levels_is_the_codes_error_not_the_parents():
    verdict = run_function(
        "def f(n):\n    v = []\n    for _ in range(n):\n        v = [v]\n    return v\n", "f", [[50], [150]], CODE
    )
    assert verdict.calls[0].ok and verdict.calls[0].value is not None
    assert (verdict.calls[1].status, verdict.calls[1].reason) == ("error", "value"), verdict.calls[1]
    verdict.model_dump_json()


def test_a_paced_blind_forger_cannot_answer_a_request_it_never_read():
    """Replies written on a timer, each after the runner has asked, still lack the request's nonce."""
    ahead = [
        framed({"kind": "calls"}),
        framed({"kind": "call", "index": 0, "status": "ok", "value_json": "42"}),
        framed({"kind": "end", "status": "ok"}),
    ]
    source = (
        OS
        + "time = sys.modules['time']\n"
        + f"""
for blob in {ahead!r}:
    for fd in range(3, 64):
        try:
            OS.write(fd, blob)
        except OSError:
            pass
    time.sleep(0.2)
OS._exit(0)
"""
    )
    verdict = run_function(source, "f", [[]], CODE)
    assert (verdict.status, verdict.reason, verdict.calls[0].value) == ("error", "tampered", None), verdict
