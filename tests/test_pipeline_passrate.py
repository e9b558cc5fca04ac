"""`factory run` with a passrate stage: rollouts sampled over loopback HTTP before the filters judge them.

The trajectories are seeded (no generation stage): the stage under test samples the
policy for the config's `passrate:` tasks, the pass_rate filter reads what it stored.
"""

import json

import yaml
from filter_rows import add_coa, coa_stats, verdicts
from loopback_server import ok
from test_pipeline import run

from factory.store import Store

FILTERS = "filters: [{name: pr, kind: pass_rate, model: policy-a, min_samples: 4}]\n"


def write_pipeline(tmp_path, fast_config, passrate=True, **sections):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(row) for row in [
        {"id": 1, "question": "What is the capital of France?", "answer": "Paris", "data_source": "mini"},
        {"id": 2, "question": "What is the capital of Peru?", "answer": "Lima", "data_source": "mini"}]))  # fmt: skip
    (tmp_path / "filters.yaml").write_text(FILTERS)
    policy = fast_config(model="policy-a", max_retries=0).model_dump(mode="json")
    config = {
        "run_dir": str(tmp_path / "run"),
        "llm": {"model": "generator", "base_url": "http://127.0.0.1:9/v1"},  # never asked: nothing is generated
        "passrate": {"tasks": str(tasks), "n": 4, **sections.pop("passrate_section", {})},
        "pipeline": {"generate": [], "filter": str(tmp_path / "filters.yaml"), "export": None, "report": False,
                     **({"passrate": {"policy": policy}} if passrate else {})},
        **sections,
    }  # fmt: skip
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def seed_trajectories(tmp_path):
    with Store.open(tmp_path / "run") as store:
        add_coa(store, "coa:m1", "What is the capital of France?", 1, task_id="mini/1", stats=coa_stats(5))
        add_coa(store, "coa:m2", "What is the capital of Peru?", 2, task_id="mini/2", stats=coa_stats(5))


def route_policy(server):
    server.route(
        "capital of France",
        *[ok(f"<think>Recall.</think>\n<answer>{city}</answer>") for city in ("Paris", "Lyon", "Nice", "Lille")],
    )
    server.route("capital of Peru", *[ok("<think>Recall.</think>\n<answer>Cusco</answer>")] * 4)


def test_the_passrate_stage_samples_before_the_filter_judges_and_a_rerun_skips_both(
    server, fast_config, tmp_path, capsys
):
    seed_trajectories(tmp_path)
    route_policy(server)
    config = write_pipeline(tmp_path, fast_config)
    code, out, err = run(config, capsys)
    assert code == 0, err
    assert "== 1/2 passrate" in out and "== 2/2 filter" in out
    assert "model policy-a: 2 tasks x 4 rollouts; this run: 8 requested" in out and len(server.requests) == 8
    v = verdicts(tmp_path / "run", "pr")
    assert v["coa:m1"][:2] == (True, "pass rate: 0.25 (1/4)")
    assert v["coa:m2"][:2] == (True, "uniform group: all 4 rollouts wrong")
    code, out, _ = run(config, capsys)  # the same inputs: both stages skipped, nothing asked
    assert code == 0 and out.count("skipped (finished before with the same inputs)") == 2
    assert len(server.requests) == 8
    changed = write_pipeline(tmp_path, fast_config, passrate_section={"threshold": 0.5})
    code, out, _ = run(changed, capsys)  # a passrate setting changed: it and the filter run again
    assert code == 0 and "skipped" not in out and "8 already scored" in out and len(server.requests) == 8


def test_without_a_passrate_stage_the_filter_names_the_command_that_samples(server, fast_config, tmp_path, capsys):
    seed_trajectories(tmp_path)
    config = write_pipeline(tmp_path, fast_config, passrate=False)
    code, out, err = run(config, capsys)
    assert code != 0 and len(server.requests) == 0 and len(err.strip().splitlines()) == 1
    # No command of this run named a task file yet: the line says where it goes.
    assert f"sample them first: factory passrate {tmp_path / 'run'} --tasks TASKS_FILE --model policy-a --n 4" in err


def test_a_passrate_stage_without_tasks_is_refused_before_any_stage(server, fast_config, tmp_path, capsys):
    seed_trajectories(tmp_path)
    config = write_pipeline(tmp_path, fast_config, passrate_section={"tasks": None})
    code, out, err = run(config, capsys)
    assert code == 2 and "== " not in out
    assert err.strip() == "error: pipeline.passrate: name the tasks to sample in the config's passrate.tasks"
