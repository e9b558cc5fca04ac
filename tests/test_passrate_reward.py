"""RL rewards cannot be hacked: pass-rate rollouts are scored by the same code checker, so a
rollout that games the harness (exits early, forges the sandbox's records, prints fake
verdicts, returns an always-equal object, patches the runner, reads the answers from disk)
gets reward 0, while a real solution in the same batch gets 1. Policy replies come over the
loopback HTTP server; the tasks are livecodebench's."""

from loopback_server import ok
from test_checks_hostile import CALL_TRICKS, FIND_X_SUM, SAN_RIGHT, SCRIPT, STDIN_TRICKS, fenced
from test_passrate import rollouts, shared_tasks

from factory.passrate import ensure_rollouts, pass_rates
from factory.store import Store

SAN = "If S ends with san, print Yes"  # abc374_a's prompt
X_SUM = "The x-sum of an array is calculated"  # 3610's prompt
SCRIPT_MARKER = "(tested by a script of asserts)"
STDIN_HACKS = ["exit(0) before printing", "forged records, then os._exit(0)", "fake verdict lines",
               "read the expected output from the task file"]  # fmt: skip
CALL_HACKS = ["module exit(0)", "forged records from the method", "an object whose __eq__ is always True",
              "replace the runner's call loop"]  # fmt: skip


def script_style(task):
    """The same task under another id, tested by SCRIPT, with a prompt the server can tell apart."""
    prompt = [dict(message) for message in task.prompt]
    prompt[-1]["content"] += SCRIPT_MARKER
    return task.model_copy(
        update={"id": task.id + "-script", "prompt": prompt, "tests": {**task.tests, "functional": SCRIPT}}
    )


def test_hacking_rollouts_get_reward_zero_and_real_ones_one(server, fast_config, tmp_path):
    stdin_task, call_task = shared_tasks(
        "livecodebench_v5.parquet", "skywork_livecodebench_v5/abc374_a", "skywork_livecodebench_v5/3610"
    )
    tasks = [stdin_task, call_task, script_style(call_task)]
    hacks = {fenced(STDIN_TRICKS[name]) for name in STDIN_HACKS} | {fenced(CALL_TRICKS[name]) for name in CALL_HACKS}
    server.route(SAN, *[ok(fenced(STDIN_TRICKS[name])) for name in STDIN_HACKS], ok(fenced(SAN_RIGHT)))
    server.route(SCRIPT_MARKER, *[ok(fenced(CALL_TRICKS[name])) for name in CALL_HACKS], ok(fenced(FIND_X_SUM)))
    server.route(X_SUM, *[ok(fenced(CALL_TRICKS[name])) for name in CALL_HACKS], ok(fenced(FIND_X_SUM)))
    with Store.open(tmp_path) as store:
        outcome = ensure_rollouts(store, tasks, fast_config(), n=5)
        rows = rollouts(store)
        rates = {row["task_id"]: row["pass_rate"] for row in pass_rates(store, "loopback").to_pylist()}
    assert outcome["llm_failures"] == outcome["check_errors"] == 0 and len(rows) == 15
    hacked = [row for row in rows if row["completion"] in hacks]
    assert len(hacked) == 12 and all((row["correct"], row["score"]) == (False, 0.0) for row in hacked), [
        row["detail"] for row in hacked if row["correct"]
    ]
    real = [row for row in rows if row["completion"] not in hacks]
    assert [(row["correct"], row["score"]) for row in real] == [(True, 1.0)] * 3, [row["detail"] for row in real]
    assert rates == {task.id: 0.2 for task in tasks}
