"""`--ray` on a real local Ray cluster (a head and a second node process on this machine), a loopback model.

The cluster is started once for the file with `ray start --block` in a temp dir of its own and free
ports, and stopped by signalling the two processes this file started (never `ray stop`, which would
stop every Ray instance on the machine). Each stage is checked against a single-process run of the
same work: `passrate` on QA tasks (also killed mid-run and resumed), `refine` on the recorded replay
set, `coa` on scripted replies, and `factory run` with a passrate stage.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from loopback_server import Action, LoopbackServer
from processes import die_with_parent
from task_files import task_file

from factory.cli import main
from factory.scale import shard_of
from factory.store import Store
from factory.tasks import load_tasks

REPO = Path(__file__).resolve().parents[1]
NQ = task_file("nq_full.jsonl")  # ../shared's, or the subset a bare clone ships
RAY = Path(sys.executable).parent / "ray"
N = 3  # rollouts per task


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_node(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    common = [
        "--num-cpus",
        "1",
        "--block",
        "--disable-usage-stats",
        "--node-ip-address",
        "127.0.0.1",
        "--dashboard-agent-listen-port",
        str(free_port()),
    ]
    return subprocess.Popen(
        [str(RAY), "start", *args, *common],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        preexec_fn=die_with_parent,  # a killed suite takes its cluster with it (tests/processes.py)
    )


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    if not RAY.exists():
        pytest.skip(f"no ray command at {RAY}")
    temp = Path(tempfile.mkdtemp(prefix="fray", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    auth_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a loopback test cluster; the driver below must match it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    port = free_port()
    nodes = [
        start_node(
            ["--head", "--port", str(port), "--include-dashboard=false", "--temp-dir", str(temp)],
            temp / "head.log",
            env,
        )
    ]
    try:
        wait_for(lambda: "Ray runtime started" in (temp / "head.log").read_text(), 90, "the Ray head")
        nodes.append(start_node(["--address", f"127.0.0.1:{port}"], temp / "node.log", env))
        wait_for(lambda: "Ray runtime started" in (temp / "node.log").read_text(), 90, "the second Ray node")
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for node in reversed(nodes):
            node.send_signal(signal.SIGTERM)  # `ray start --block` stops the processes it started
        for node in nodes:
            node.wait(60)
        shutil.rmtree(temp, ignore_errors=True)
        if auth_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth_mode


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "nq8.jsonl"
    with NQ.open() as rows:
        path.write_text("".join(next(rows) for _ in range(8)))
    return path


@pytest.fixture(scope="module")
def model(tasks_file):
    """Answers right for half the tasks (by a hash of the question), so verdicts differ."""
    answers = {task.question: task.answers[0] for task in load_tasks(tasks_file)}

    def reply(body: dict) -> str:
        text = json.dumps(body["messages"], ensure_ascii=False)
        question = next(q for q in answers if json.dumps(q, ensure_ascii=False)[1:-1] in text)
        right = hashlib.sha256(question.encode()).digest()[0] % 2
        return f"<answer>{answers[question] if right else 'nobody'}</answer>"

    srv = LoopbackServer(content=reply)
    srv.start_in_thread()
    yield srv
    srv.stop()


def passrate(run_dir: Path, tasks_file: Path, server: LoopbackServer, *extra: str) -> int:
    return main(
        [
            "passrate",
            str(run_dir),
            "--tasks",
            str(tasks_file),
            "--model",
            "loopback",
            "--base-url",
            server.base_url,
            "-n",
            str(N),
            "-q",
            *extra,
        ]
    )


def table(run_dir: Path, sql: str) -> list[tuple]:
    with Store.open(run_dir, read_only=True) as store:
        return store.query(sql)


ROLLOUTS = "SELECT task_id, sample_index, completion, answer, correct, score, request_hash FROM rollouts ORDER BY 1, 2"
CALLS = "SELECT request_hash, stage, status, response FROM llm_calls ORDER BY 1"


def shards_write_the_run_store(run_dir, stage, count=2):
    """Each local shard's folder holds a link to the run's own store: the shard wrote where the run reads."""
    for index in range(count):
        link = run_dir / "shards" / f"{stage}-{index}" / "factory.sqlite"
        assert link.is_symlink() and link.resolve() == (run_dir / "factory.sqlite").resolve()


def test_a_run_on_two_workers_writes_the_store_a_single_process_run_writes(cluster, tasks_file, model, tmp_path):
    assert passrate(tmp_path / "single", tasks_file, model) == 0
    assert passrate(tmp_path / "ray", tasks_file, model, "--ray", cluster, "--shards", "2") == 0

    single, sharded = table(tmp_path / "single", ROLLOUTS), table(tmp_path / "ray", ROLLOUTS)
    assert len(single) == 8 * N and sharded == single
    assert {row[4] for row in single} == {True, False}
    assert table(tmp_path / "ray", CALLS) == table(tmp_path / "single", CALLS)
    plan = json.loads((tmp_path / "ray" / "shards" / "plan.json").read_text())
    assert plan["passrate"]["count"] == 2
    last = json.loads((tmp_path / "ray" / "shards" / "last.json").read_text())
    assert [shard["counts"]["tasks"] for shard in last["shards"]] == [2, 6]  # sha256(task id) mod 2
    shards_write_the_run_store(tmp_path / "ray", "passrate")


def test_a_killed_worker_is_rerun_by_ray_and_sends_nothing_answered_twice(cluster, tasks_file, model, tmp_path, capsys):
    run_dir = tmp_path / "run"
    hung = load_tasks(tasks_file)[0]  # in shard 1: its worker is killed while this task's request hangs
    assert shard_of(hung.id, 2) == 1
    model.route(hung.question, Action(delay_s=8))
    first = len(model.requests)
    done = []
    command = threading.Thread(
        target=lambda: done.append(passrate(run_dir, tasks_file, model, "--ray", cluster, "--shards", "2"))
    )
    command.start()
    wait_for(lambda: len(model.requests) - first >= 8 * N, 60, "every request to arrive")
    time.sleep(1.0)  # the answered calls reach the shard's store (flushed every 0.25 s)
    answered = {r["hash"] for r in model.requests[first:]} - {
        r["hash"] for r in model.requests[first:] if hung.question in json.dumps(r["body"])
    }
    killed_at = len(model.requests)
    pid = int((run_dir / "shards" / "passrate-1" / "worker.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    command.join(120)
    assert done == [0]

    resent = [r["hash"] for r in model.requests[killed_at:]]
    assert resent and not set(resent) & answered  # only the request that never came back is asked again
    rows = table(run_dir, ROLLOUTS)
    assert len(rows) == 8 * N and len({(row[0], row[1]) for row in rows}) == 8 * N
    assert table(run_dir, "SELECT count(*), count(DISTINCT request_hash) FROM llm_calls") == [(8 * N, 8 * N)]

    capsys.readouterr()
    before = len(model.requests)
    assert passrate(run_dir, tasks_file, model, "--ray", cluster, "--shards", "3") == 0
    assert len(model.requests) == before  # everything answered: the rerun sends nothing
    assert "keeping them, not the 3 asked" in capsys.readouterr().err
    assert table(run_dir, ROLLOUTS) == rows


def test_a_node_that_does_not_see_the_run_folder_fails_with_one_line(cluster, tmp_path):
    from factory.scale import cluster as ray_cluster
    from factory.scale.plan import write_probe
    from factory.scale.shard_task import ShardJob

    ray_cluster.connect(cluster)
    write_probe(tmp_path)  # the driver's token; the job carries another, as a node seeing another folder would
    job = ShardJob("passrate", 0, 1, tmp_path, "not-the-drivers-token", tmp_path, None, len)
    results, failures = ray_cluster.run_shards([job], max_retries=0, progress=False)
    assert results == [] and len(failures) == 1 and "\n" not in failures[0]
    assert failures[0].startswith(f"shard passrate-0: run folder {tmp_path} is not the driver's on node ")
    assert "every Ray node mounts at the same path" in failures[0]


REPLAY_SET = REPO / "benchmarks" / "data" / "refine_replay" / "capable_v1"
TRAJECTORIES = (
    "SELECT trajectory_id, persona_id, script_id, verified, reason, steps, n_turns, n_errors, "
    "n_corrections FROM trajectories ORDER BY 1"
)


def test_refine_sharded_by_persona_writes_the_single_process_store(cluster, tmp_path):
    from refine_replay import ReplayServer, load_replay_set, write_personas

    every = load_replay_set(REPLAY_SET)
    by_shard = {k: [r for r in every if shard_of(r["persona_id"], 2) == k][:2] for k in (0, 1)}
    recordings = by_shard[0] + by_shard[1]
    personas = write_personas(recordings, tmp_path / "personas.jsonl")
    for name, ray_flags in (("single", []), ("ray", ["--ray", cluster, "--shards", "2"])):
        server = ReplayServer(recordings)  # its attempt counters start again for each run
        base_url = server.start_in_thread()
        try:
            argv = [
                "refine",
                str(tmp_path / name),
                "--model",
                "replay",
                "--base-url",
                base_url,
                "--personas",
                str(personas),
                "--count",
                "4",
                "--no-code",
                "--dm",
                "llm",
                "-q",
                *ray_flags,
            ]
            assert main(argv) == 0
        finally:
            server.stop()
    for sql in (
        TRAJECTORIES,
        "SELECT script_id, persona_id, attempt, verified FROM scripts ORDER BY 1",
        "SELECT trajectory_id, attempt, ok, rule FROM verdicts ORDER BY 1, 2",
        "SELECT persona_id, text FROM personas ORDER BY 1",
        "SELECT request_hash, status FROM llm_calls ORDER BY 1",
    ):
        assert table(tmp_path / "ray", sql) == table(tmp_path / "single", sql), sql
    assert len(table(tmp_path / "ray", TRAJECTORIES)) == 4
    shards_write_the_run_store(tmp_path / "ray", "refine")


def test_the_pipeline_runs_its_passrate_stage_on_ray_and_the_filter_reads_the_merged_rollouts(
    cluster, server, fast_config, tmp_path, capsys
):
    from filter_rows import verdicts
    from test_pipeline import run
    from test_pipeline_passrate import route_policy, seed_trajectories, write_pipeline

    seed_trajectories(tmp_path)
    route_policy(server)
    code, out, err = run(write_pipeline(tmp_path, fast_config), capsys, "--ray", cluster, "--shards", "2")
    assert code == 0, err
    assert "model policy-a: 2 tasks x 4 rollouts; this run: 8 requested" in out and len(server.requests) == 8
    assert verdicts(tmp_path / "run", "pr")["coa:m1"][:2] == (True, "pass rate: 0.25 (1/4)")
    last = json.loads((tmp_path / "run" / "shards" / "last.json").read_text())
    assert [shard["counts"]["tasks"] for shard in last["shards"]] == [0, 2]  # an empty shard ends cleanly


def test_coa_sharded_by_task_writes_the_single_process_store(cluster, server, tmp_path):
    from test_coa_mas import write_tasks
    from test_pipeline_coa import route_solutions

    questions = ("What is 6 * 7?", "What is 7 * 6?")  # one scripted solution answers both
    tasks = write_tasks(
        tmp_path / "math.jsonl",
        *[
            {"id": i, "question": q, "answer": "42", "domain": "math", "data_source": "t"}
            for i, q in enumerate(questions)
        ],
    )  # t/0 and t/1: one in each shard
    route_solutions(server, tasks=4)  # two runs of two tasks
    for name, ray_flags in (("single", []), ("ray", ["--ray", cluster, "--shards", "2"])):
        argv = [
            "coa",
            str(tmp_path / name),
            "--tasks",
            tasks,
            "--count",
            "2",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "-q",
            *ray_flags,
        ]
        assert main(argv) == 0
    for sql in (
        "SELECT trace_id, task_id, status, final_answer, n_tool_calls, n_replans FROM coa_traces ORDER BY 1",
        "SELECT trajectory_id, task_id, rule, prompt, completion, correct FROM trajectories ORDER BY 1",
    ):
        assert table(tmp_path / "ray", sql) == table(tmp_path / "single", sql), sql
    assert table(tmp_path / "ray", "SELECT count(*) FROM trajectories WHERE correct") == [(2,)]
    shards_write_the_run_store(tmp_path / "ray", "coa")


# Without a cluster: the flags, the merge, and the single-process path that never imports ray.


def test_a_normal_run_never_imports_ray(tasks_file, tmp_path):
    script = f"""
import sys
from loopback_server import LoopbackServer
from factory.cli import main
server = LoopbackServer()
server.start_in_thread()
code = main(["passrate", {str(tmp_path)!r}, "--tasks", {str(tasks_file)!r}, "--model", "loopback",
             "--base-url", server.base_url, "-n", "1", "-q"])
print(code, "ray" in sys.modules)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.splitlines()[-1] == "0 False", done.stderr[-2000:]


def test_the_ray_flags_and_section_become_the_run_config(tmp_path):
    from factory.cli import build_parser
    from factory.errors import ConfigError
    from factory.run_config import config_from_args

    def config(*argv):
        return config_from_args(build_parser().parse_args(["passrate", str(tmp_path), *argv])).ray

    assert not config().enabled
    assert (config("--ray").enabled, config("--ray").address) == (True, None)
    assert (config("--ray", "10.0.0.1:6379", "--shards", "4").address, config("--shards", "4").shards) == (
        "10.0.0.1:6379",
        4,
    )
    (tmp_path / "run.yaml").write_text("ray: {enabled: true, shards: 8, max_retries: 1}\n")
    from_file = config("-c", str(tmp_path / "run.yaml"))
    assert (from_file.enabled, from_file.shards, from_file.max_retries) == (True, 8, 1)
    with pytest.raises(ConfigError, match="ray.shards"):
        config("--shards", "0")
    for command in ("refine", "coa", "run"):
        assert build_parser().parse_args([command, "--ray", "--shards", "2"]).shards == 2


def shard_writing(config) -> dict:
    """A stage's shard work: one rollout row in the shard's run folder's store."""
    with Store.open(config.run_dir) as store:
        store.execute(
            "INSERT INTO rollouts (task_id, model, sample_index) VALUES (?, 'm', 0)", [f"t{config.ray.shard.index}"]
        )
    return {"rows": 1}


@pytest.mark.parametrize("own_store", [False, True], ids=["this host", "another node"])
def test_a_shard_writes_the_run_store_here_and_is_merged_from_another_node(tmp_path, monkeypatch, own_store):
    """No cluster: run_shard as a Ray worker runs it. On the driver's host the shard writes the run's store (read
    live, nothing to merge); a shard on another node keeps a store of its own, which the driver merges."""
    from factory.run import open_run
    from factory.run_config import FactoryConfig
    from factory.scale.plan import write_probe
    from factory.scale.shard_task import OWN_STORE_ENV, ShardJob, run_shard
    from factory.scale.sharded import merge_shards

    if own_store:
        monkeypatch.setenv(OWN_STORE_ENV, "1")
    token, config = write_probe(tmp_path), FactoryConfig(run_dir=tmp_path)
    with open_run(tmp_path, "passrate") as run:
        for index in (0, 1):
            run_shard(ShardJob("passrate", index, 2, tmp_path, token, tmp_path, config, shard_writing))
        rows = run.store.query("SELECT count(*) FROM rollouts")
        assert rows == [(0 if own_store else 2,)]  # a local shard's rows are in the run's store as it runs
        merge_shards(run, "passrate", 2)
        assert run.store.query("SELECT task_id FROM rollouts ORDER BY 1") == [("t0",), ("t1",)]
    links = [(tmp_path / "shards" / f"passrate-{k}" / "factory.sqlite").is_symlink() for k in (0, 1)]
    assert links == [not own_store] * 2


def test_merging_a_shard_twice_adds_nothing_and_takes_its_latest_rows(tmp_path):
    from factory.scale.merge import merge_shard

    with Store.open(tmp_path / "shard") as shard:
        shard.execute(
            "INSERT INTO rollouts (task_id, model, sample_index, correct) VALUES ('t', 'm', 0, true), "
            "('t', 'm', 1, NULL)"
        )
        shard.execute("INSERT INTO llm_calls (request_hash, stage, status) VALUES ('h', 'passrate', 'error')")
        shard.execute("INSERT INTO filter_verdicts (trajectory_id, filter, keep) VALUES ('x', 'f', true)")
    path = tmp_path / "shard" / "factory.sqlite"
    with Store.open(tmp_path / "main") as main_store:
        assert {k: v for k, v in merge_shard(main_store, path).items() if v} == {
            "rollouts": 2,
            "llm_calls": 1,
            "filter_verdicts": 1,
        }
        assert not any(merge_shard(main_store, path).values())
    with Store.open(tmp_path / "shard") as shard:  # a rerun of the shard retried the failed request and sample
        shard.execute(
            "INSERT OR REPLACE INTO rollouts (task_id, model, sample_index, correct) VALUES ('t', 'm', 1, false)"
        )
        shard.execute("INSERT OR REPLACE INTO llm_calls (request_hash, stage, status) VALUES ('h', 'passrate', 'ok')")
    with Store.open(tmp_path / "main") as main_store:
        assert not any(merge_shard(main_store, path).values())
        assert main_store.query("SELECT sample_index, correct FROM rollouts ORDER BY 1") == [(0, True), (1, False)]
        assert main_store.query("SELECT status FROM llm_calls") == [("ok",)]
        assert main_store.query("SELECT count(*) FROM filter_verdicts") == [(1,)]
