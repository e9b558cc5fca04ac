"""Pass-rate sampling over real HTTP (scripted loopback replies), real task files, real checkers and DuckDB."""

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from loopback_server import Action, ok
from task_files import task_file

from factory.errors import ConfigError
from factory.passrate import PassrateError, ensure_rollouts, pass_rates, summarize
from factory.passrate.command import add_passrate_parser
from factory.run_config import config_from_args
from factory.store import Store
from factory.tasks import TaskError, load_tasks

DIVISORS = "How many positive whole-number divisors does 196 have?"  # MATH500/3, answer 9
ALTERNATING = "+99-100"  # MATH500/16, answer -50
F_SUM = "f(-2) +f(-1)+f(0)"  # MATH500/2, answer \frac{14}{3}
SAN = "If S ends with san, print Yes"  # livecodebench abc374_a
SAN_PROGRAM = (
    "<answer>\n```py\nimport sys\ns = sys.stdin.readline().strip()\nprint('Yes' if s.endswith('san') else 'No')\n"
    "```\n</answer>"
)


def shared_tasks(name, *ids):
    path = task_file(name)  # ../shared's, or the subset a bare clone ships (it holds these ids)
    by_id = {task.id: task for task in load_tasks(path)}
    return [by_id[task_id] for task_id in ids]


def boxed(answer):
    return ok(f"<think>Work it out.</think>\n<answer>\\boxed{{{answer}}}</answer>")


def rollouts(store, model="loopback"):
    columns = [d[0] for d in store.query("DESCRIBE rollouts")]
    rows = store.query("SELECT * FROM rollouts WHERE model = ? ORDER BY task_id, sample_index", [model])
    return [dict(zip(columns, row)) for row in rows]


def rates_by_task(store, model="loopback"):
    return {row["task_id"]: row for row in pass_rates(store, model).to_pylist()}


def test_math_rollouts_are_sampled_checked_and_stored(server, fast_config, tmp_path):
    tasks = shared_tasks("math500.parquet", "MATH500/3", "MATH500/16", "MATH500/2")
    server.route(DIVISORS, *[boxed(9)] * 4)
    server.route(ALTERNATING, *[boxed(50)] * 4)
    server.route(F_SUM, boxed("\\frac{28}{6}"), *[boxed(14)] * 3)  # 28/6 is right only by math-verify
    with Store.open(tmp_path) as store:
        outcome = ensure_rollouts(store, tasks, fast_config(params={"seed": 7}), n=4)
        rows, rates = rollouts(store), rates_by_task(store)

    assert outcome["requested"] == 12 and outcome["rollouts"] == 12 and outcome["llm_failures"] == 0
    assert len(rows) == 12 and len({row["request_hash"] for row in rows}) == 12
    assert {(r["task_id"], r["sample_index"]) for r in rows} == {(t.id, i) for t in tasks for i in range(4)}
    assert {row["answer"] for row in rows if row["task_id"] == "MATH500/3"} == {"9"}
    assert rates["MATH500/3"] == {"task_id": "MATH500/3", "n": 4, "n_correct": 4, "n_failed": 0,
                                  "pass_rate": 1.0, "uniform": True}  # fmt: skip
    assert (rates["MATH500/16"]["pass_rate"], rates["MATH500/16"]["uniform"]) == (0.0, True)
    assert (rates["MATH500/2"]["pass_rate"], rates["MATH500/2"]["uniform"]) == (0.25, False)
    bodies = [request["body"] for request in server.requests]
    assert all(body["messages"] == tasks[0].prompt for body in bodies if DIVISORS in str(body["messages"]))
    assert {body["temperature"] for body in bodies} == {1.0}
    assert sorted(body["seed"] for body in bodies if DIVISORS in str(body["messages"])) == [7, 8, 9, 10]


def test_summary_counts_uniform_groups_histogram_and_kept_tasks(server, fast_config, tmp_path):
    tasks = shared_tasks("math500.parquet", "MATH500/3", "MATH500/16", "MATH500/2")
    server.route(DIVISORS, *[boxed(9)] * 4)
    server.route(ALTERNATING, *[boxed(50)] * 4)
    server.route(F_SUM, boxed("\\frac{14}{3}"), *[boxed(14)] * 3)
    with Store.open(tmp_path) as store:
        ensure_rollouts(store, tasks, fast_config(), n=4, model_label="policy-a")
        summary = summarize(store, "policy-a", threshold=0.3)
        assert summarize(store, "policy-a", task_ids=["MATH500/3"])["tasks"] == 1
        assert summarize(store, "another-model")["tasks"] == 0
    assert summary["tasks"] == 3 and summary["rollouts"] == 12 and summary["mean_pass_rate"] == pytest.approx(1.25 / 3)
    assert (summary["uniform"], summary["all_right"], summary["all_wrong"]) == (2, 1, 1)
    assert summary["histogram"] == {"0": 1, "(0, 0.25]": 1, "(0.25, 0.5]": 0, "(0.5, 0.75]": 0, "(0.75, 1)": 0, "1": 1}
    assert summary["kept"] == 2  # pass rates 0 and 0.25; the always-solved task is dropped


def test_rerun_requests_only_missing_rollouts(server, fast_config, tmp_path):
    tasks = shared_tasks("math500.parquet", "MATH500/3", "MATH500/16")
    server.route(DIVISORS, *[boxed(9)] * 3)
    with Store.open(tmp_path) as store:
        ensure_rollouts(store, tasks, fast_config(), n=3)
        sent = len(server.requests)
        again = ensure_rollouts(store, tasks, fast_config(), n=3)
        assert len(server.requests) == sent and again["requested"] == 0 and again["already_scored"] == 6

        store.execute("DELETE FROM rollouts WHERE task_id = 'MATH500/16' AND sample_index < 2")
        uncached = ensure_rollouts(store, tasks, fast_config(cache=False), n=3)
        assert len(server.requests) == sent + 2 and uncached["requested"] == 2 and uncached["rollouts"] == 6

        store.execute("DELETE FROM rollouts WHERE task_id = 'MATH500/3'")
        from_cache = ensure_rollouts(store, tasks, fast_config(), n=3)  # the call log answers: no HTTP
        assert len(server.requests) == sent + 2 and from_cache["requested"] == 3
        assert [r["correct"] for r in rollouts(store) if r["task_id"] == "MATH500/3"] == [True] * 3

        more = ensure_rollouts(store, tasks, fast_config(), n=5)  # a larger n asks only for the new indices
        assert len(server.requests) == sent + 2 + 4 and more["requested"] == 4 and more["rollouts"] == 10


def test_failed_requests_become_failure_rows_and_are_retried_later(server, fast_config, tmp_path):
    tasks = shared_tasks("math500.parquet", "MATH500/3", "MATH500/16")
    server.route(DIVISORS, Action(status=500), Action(body="this is not JSON"), boxed(9))
    cut_off = Action(content="<think>1-2 is -1, 3-4 is -1, so", finish_reason="length")  # a sample, scored wrong
    server.route(ALTERNATING, boxed(-50), boxed(-50), cut_off)
    with Store.open(tmp_path) as store:
        outcome = ensure_rollouts(store, tasks, fast_config(max_retries=0), n=3)
        rows = [r for r in rollouts(store) if r["task_id"] == "MATH500/3"]
        failed = [r for r in rows if r["correct"] is None]
        assert outcome["llm_failures"] == 2 and outcome["rollouts"] == 6
        assert sorted(r["detail"].split(":")[0] for r in failed) == ["llm error bad_response", "llm error server"]
        assert all(r["completion"] is None and r["score"] is None and r["request_hash"] for r in failed)
        rates = rates_by_task(store)
        assert (rates["MATH500/3"]["n"], rates["MATH500/3"]["n_failed"], rates["MATH500/3"]["pass_rate"]) == (1, 2, 1.0)
        assert (rates["MATH500/16"]["n"], rates["MATH500/16"]["n_correct"]) == (3, 2)
        assert any(r["detail"].startswith("cut off at max_tokens; ") for r in rollouts(store) if r["correct"] is False)

        sent = len(server.requests)
        kept = ensure_rollouts(store, tasks, fast_config(max_retries=0), n=3, retry_failures=False)
        assert len(server.requests) == sent and kept["requested"] == 0

        server.route(DIVISORS, boxed(9), boxed(8))
        retried = ensure_rollouts(store, tasks, fast_config(max_retries=0), n=3)
        assert len(server.requests) == sent + 2 and retried["requested"] == 2 and retried["llm_failures"] == 0
        rates = rates_by_task(store)
        assert (rates["MATH500/3"]["n"], rates["MATH500/3"]["n_failed"], rates["MATH500/3"]["n_correct"]) == (3, 0, 2)


def test_code_task_where_every_rollout_passes_its_tests(server, fast_config, tmp_path):
    tasks = shared_tasks("livecodebench_v5.parquet", "skywork_livecodebench_v5/abc374_a")
    server.route(SAN, *[ok(SAN_PROGRAM)] * 3)
    with Store.open(tmp_path) as store:
        ensure_rollouts(store, tasks, fast_config(), n=3)
        rows, rates = rollouts(store), rates_by_task(store)
    assert [(r["correct"], r["score"], r["detail"]) for r in rows] == [(True, 1.0, "2/2 passed")] * 3
    assert rows[0]["answer"].startswith("import sys") and "<answer>" not in rows[0]["answer"]
    assert rates["skywork_livecodebench_v5/abc374_a"]["pass_rate"] == 1.0
    assert rates["skywork_livecodebench_v5/abc374_a"]["uniform"] is True


def test_an_undecided_check_keeps_the_reply_and_is_rechecked_without_a_request(server, fast_config, tmp_path):
    (task,) = shared_tasks("math500.parquet", "MATH500/3")
    unanswerable = task.model_copy(update={"answers": []})  # the math checker cannot decide without a reference
    server.route(DIVISORS, boxed(9))
    with Store.open(tmp_path) as store:
        first = ensure_rollouts(store, [unanswerable], fast_config(), n=1)
        (row,) = rollouts(store)
        assert first["check_errors"] == 1 and row["correct"] is None and row["completion"].endswith("</answer>")
        assert row["detail"] == "check error: task MATH500/3 has no reference answer"

        async def from_a_running_loop():  # a caller already inside an event loop (an async filter)
            return ensure_rollouts(store, [task], fast_config(cache=False), n=1)

        sent = len(server.requests)
        again = asyncio.run(from_a_running_loop())
        assert len(server.requests) == sent and (again["rechecked"], again["requested"]) == (1, 0)
        assert rates_by_task(store)["MATH500/3"]["pass_rate"] == 1.0


def qa_file(tmp_path):
    """Two plain NQ rows (question + answer aliases, no chat prompt) in a task file of their own."""
    path = task_file("nq_full.jsonl")
    with path.open() as source:
        lines = [next(source) for _ in range(2)]
    target = tmp_path / "nq.jsonl"
    target.write_text("".join(lines))
    return target, load_tasks(target)


def test_plain_qa_rows_use_the_passrate_prompts_and_exact_match(server, fast_config, tmp_path):
    path, (first, second) = qa_file(tmp_path)
    server.route(first.question, *[ok(f"<answer>{first.answers[0]}</answer>")] * 2)
    with Store.open(tmp_path) as store:
        outcome = ensure_rollouts(store, str(path), fast_config(), n=2)  # a task file works as `tasks`
        rates = rates_by_task(store)
    assert outcome["tasks"] == 2 and outcome["rollouts"] == 4
    assert (rates[first.id]["pass_rate"], rates[second.id]["pass_rate"]) == (1.0, 0.0)
    messages = server.requests[0]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"] and "<answer>" in messages[0]["content"]
    assert messages[1]["content"] in (first.question, second.question)


def run_cli(argv):
    parser = argparse.ArgumentParser(prog="factory")
    add_passrate_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args, config_from_args(args))


def test_command_prints_the_summary(server, tmp_path, capsys):
    path, (first, _) = qa_file(tmp_path)
    server.route(first.question, *[ok(f"<answer>{first.answers[0]}</answer>")] * 2)
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(path), "--model", "loopback",
            "--base-url", server.base_url, "--n", "2", "-q"]  # fmt: skip
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    assert "tasks: 2, rollouts: 4 (4 scored, 0 failed or undecided)" in out
    assert "mean pass rate: 0.500" in out and "uniform groups: 2 (all right 1, all wrong 1)" in out
    assert "pass rate histogram: 0: 1 |" in out and "kept at threshold 0.3: 1 of 2 tasks" in out
    assert run_cli(argv) == 0 and "this run: 0 requested, 4 already scored" in capsys.readouterr().out


def test_bad_settings_are_one_line_errors(fast_config, tmp_path):
    with Store.open(tmp_path) as store:
        with pytest.raises(PassrateError, match="n must be >= 1"):
            ensure_rollouts(store, [], fast_config(), n=0)
        with pytest.raises(ConfigError, match="field 'modle': unknown field"):
            ensure_rollouts(store, [], {"modle": "qwen"}, n=1)
        with pytest.raises(PassrateError, match="Task objects or a task file, got dict"):
            ensure_rollouts(store, [{"question": "q"}], fast_config(), n=1)
        with pytest.raises(TaskError, match="no such task file"):
            ensure_rollouts(store, str(tmp_path / "missing.jsonl"), fast_config(), n=1)
    with pytest.raises(ConfigError, match="passrate needs tasks"):
        run_cli(["passrate", str(tmp_path), "--model", "loopback", "--base-url", "http://127.0.0.1:9/v1"])
    with pytest.raises(ConfigError, match="two run folders"):
        run_cli(["passrate", str(tmp_path / "a"), "--run-dir", str(tmp_path / "b"), "--tasks", "x.jsonl"])


KILLED_RUN = """
import json, sys
from factory.tasks import load_tasks
from factory.llm import LLMConfig
from factory.passrate import ensure_rollouts
from factory.store import Store
spec = json.loads(sys.argv[1])
tasks = [task for task in load_tasks(spec["tasks"]) if task.id in spec["ids"]]
with Store.open(spec["run_dir"]) as store:
    ensure_rollouts(store, tasks, LLMConfig(**spec["llm"]), n=3)
"""


def test_a_killed_run_resumes_without_repeating_finished_calls(server, fast_config, tmp_path):
    tasks = shared_tasks("math500.parquet", "MATH500/3", "MATH500/16")
    server.route(DIVISORS, *[boxed(9)] * 3)
    server.route(ALTERNATING, *[Action(content="never sent", delay_s=5)] * 3)  # still in flight at the kill
    llm = fast_config().model_dump(include={"model", "base_url", "timeout_s"}) | {"timeout_s": 60}
    spec = {"tasks": str(task_file("math500.parquet")), "ids": [t.id for t in tasks], "run_dir": str(tmp_path),
            "llm": llm}  # fmt: skip
    child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, json.dumps(spec)], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(server.requests) < 6 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) == 6, "the child did not send its requests"
        time.sleep(2)  # the call log is flushed every 0.25 s; rollout rows only per batch
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()

    server.route(ALTERNATING, *[boxed(-50)] * 3)
    with Store.open(tmp_path) as store:
        outcome = ensure_rollouts(store, tasks, fast_config(), n=3)
        rates = rates_by_task(store)
    resent = [request["body"]["messages"][-1]["content"] for request in server.requests[6:]]
    assert len(resent) == 3 and all(ALTERNATING in text for text in resent)
    assert outcome["rollouts"] == 6 and rates["MATH500/3"]["pass_rate"] == rates["MATH500/16"]["pass_rate"] == 1.0
