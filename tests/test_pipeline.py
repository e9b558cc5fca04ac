"""`factory run -c pipeline.yaml`: the whole chain from one config, over real HTTP, a real store and a real trainer.

The generator is the recorded capable-model set replayed over loopback HTTP (refine
with the LLM as DM, no validation code); the rest is the shipped examples: the
filters, the tiny training config, then the trained checkpoint playing the held-out
environments.
"""

import contextlib
import io
import json
from pathlib import Path

import pytest
import yaml
from refine_replay import ReplayServer, load_replay_set, write_personas

from factory.cli import main
from factory.export.registry import FORMATS
from factory.pipeline.ledger import LEDGER_FILENAME
from factory.run_config import load_factory_config

REPO = Path(__file__).resolve().parent.parent
REPLAY_SET = REPO / "benchmarks" / "data" / "refine_replay" / "capable_v1"
PERSONAS = 6
ALL_STAGES = ["refine", "filter", "export", "report", "publish", "train", "eval"]


def serve_replay():
    recordings = load_replay_set(REPLAY_SET)[:PERSONAS]
    server = ReplayServer(recordings)  # answers each recorded attempt once: one server per run folder
    base_url = server.start_in_thread()
    yield recordings, server, base_url
    server.stop()


replay = pytest.fixture(scope="module")(serve_replay)
fresh_replay = pytest.fixture(serve_replay)


def write_pipeline(folder: Path, replay, **changes) -> Path:
    recordings, _, base_url = replay
    config = {
        "run_dir": str(folder / "run"),
        "llm": {"model": "replay", "base_url": base_url, "max_retries": 0},
        "refine": {"personas": str(write_personas(recordings, folder / "personas.jsonl")), "count": PERSONAS,
                   "with_code": False, "dm_evaluation": "llm"},
        "pipeline": {
            "generate": ["refine"],
            "filter": str(REPO / "examples" / "filters.yaml"),
            "export": {"formats": ["sharegpt", "messages"], "validation": 0.34},
            "publish": {"to": str(folder / "hub")},
            "train": {"config": str(REPO / "examples" / "train_tiny.yaml"),
                      "overrides": {"optim.max_steps": 2, "save_steps": 0, "log_steps": 1}},
            "eval": {"max_steps": 3, "limit": 1},
        },
    }  # fmt: skip
    for key, value in changes.items():
        config["pipeline"][key] = value
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run(config: Path, capsys, *flags: str) -> tuple[int, str, str]:
    code = main(["run", "-c", str(config), "-q", *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def first_run(replay, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipeline")
    config = write_pipeline(folder, replay)
    out = io.StringIO()  # module scope: capsys is per test
    with contextlib.redirect_stdout(out):
        code = main(["run", "-c", str(config), "-q"])
    return folder, config, code, out.getvalue(), len(replay[1].requests)


def test_every_stage_runs_and_leaves_its_output(first_run):
    folder, _, code, out, _ = first_run
    assert code == 0, out
    for number, stage in enumerate(ALL_STAGES, 1):
        assert f"== {number}/7 {stage}\n" in out
    run_dir = folder / "run"
    assert "funnel: personas 6 -> scripts 6" in out
    refine_part = out.split("== 2/7")[0]
    assert "   failures" in refine_part  # the stage's failure reasons (or "none recorded") follow its funnel
    assert (run_dir / "report.html").is_file()
    assert sorted(p.name for p in (run_dir / "export" / "sharegpt").iterdir())[0].startswith("train-")
    assert (folder / "hub" / "README.md").is_file()
    assert any((run_dir / "train").glob("checkpoint-2/model.safetensors"))
    assert "results: " in out and list((run_dir / "eval").glob("*.json"))
    ledger = json.loads((run_dir / LEDGER_FILENAME).read_text())["stages"]
    assert list(ledger) == ALL_STAGES


def test_the_train_stage_reads_this_export_and_eval_plays_only_held_out_scripts(first_run):
    folder, *_ = first_run
    import pyarrow.parquet as pq

    trained = set()
    for shard in (folder / "run" / "export" / "sharegpt").glob("train-*.parquet"):
        trained |= set(pq.read_table(shard, columns=["script_id"]).column("script_id").to_pylist())
    results = json.loads(next((folder / "run" / "eval").glob("*.json")).read_text())
    played = {episode["env_id"] for episode in results["environments"]}
    assert played and not played & trained


def test_a_rerun_skips_every_finished_stage_and_asks_nothing(first_run, replay, capsys):
    _, config, _, _, requests = first_run
    code, out, _ = run(config, capsys)
    assert code == 0
    assert out.count("skipped (finished before with the same inputs)") == 7
    assert len(replay[1].requests) == requests


def test_a_changed_stage_reruns_it_and_what_follows_only(first_run, replay, capsys, tmp_path):
    folder, _, _, _, requests = first_run
    config = write_pipeline(folder, replay, export={"formats": ["sharegpt"], "validation": 0.34})
    code, out, _ = run(config, capsys)
    assert code == 0, out
    skipped = [stage for stage in ALL_STAGES if f"{stage}: skipped" in out]
    assert skipped == ["refine", "filter", "train"]  # the sharegpt files came out the same: nothing to retrain
    assert len(replay[1].requests) == requests


def test_a_failing_stage_stops_with_one_line_and_the_rerun_continues_there(fresh_replay, capsys, tmp_path):
    replay = fresh_replay
    broken = tmp_path / "train.yaml"
    broken.write_text("model: {path: tiny:qwen2}\noptim: {learning_rate: fast}\n")
    config = write_pipeline(tmp_path, replay, train={"config": str(broken)}, eval=None)
    code, out, err = run(config, capsys)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "== 6/6 train" in out
    done = json.loads((tmp_path / "run" / LEDGER_FILENAME).read_text())["stages"]
    assert list(done) == ALL_STAGES[:5]
    config = write_pipeline(tmp_path, replay, train={"config": str(REPO / "examples" / "train_tiny.yaml"),
                                                      "overrides": {"optim.max_steps": 1, "save_steps": 0}},
                            eval=None)  # fmt: skip
    code, out, _ = run(config, capsys)
    assert code == 0 and out.count("skipped (finished before") == 5 and "trained: " in out


def test_only_and_from_choose_stages(first_run, capsys):
    _, config, *_ = first_run
    code, out, _ = run(config, capsys, "--only", "report")
    assert code == 0 and "== 4/7 report\n" in out and out.count("skipped (not chosen)") == 6
    code, out, _ = run(config, capsys, "--from", "train")
    assert code == 0 and out.count("skipped (not chosen)") == 5 and "trained: " in out and "results: " in out
    code, _, err = run(config, capsys, "--only", "coa")
    assert code == 2 and "stage 'coa' is not in this pipeline" in err


def test_a_pipeline_that_cannot_work_is_refused_before_any_stage(tmp_path, capsys):
    config = tmp_path / "p.yaml"
    config.write_text(yaml.safe_dump({"run_dir": str(tmp_path / "run"), "pipeline": {"eval": {"max_steps": 2}}}))
    code, _, err = run(config, capsys)
    assert code == 2 and "eval plays the trained checkpoint" in err and not (tmp_path / "run").exists()
    code, _, err = main(["run", "-q"]), None, capsys.readouterr().err
    assert code == 2 and "needs a pipeline config" in err


def test_the_shipped_demo_config_is_valid_and_names_files_that_exist():
    config = load_factory_config(REPO / "examples" / "pipeline.yaml")
    pipeline = config.pipeline
    assert config.llm.model == "local" and pipeline.generate == ["refine"]
    for path in (pipeline.filter, pipeline.train.config):
        assert (REPO / path).is_file(), path
    assert pipeline.eval is not None and pipeline.export.validation > 0


def test_a_stage_whose_output_was_deleted_runs_again(first_run, capsys):
    folder, config, *_ = first_run
    (folder / "run" / "report.html").unlink()
    code, out, _ = run(config, capsys)
    assert code == 0 and "report: its output is gone since it finished; running it again" in out
    assert (folder / "run" / "report.html").is_file()
    assert out.count("skipped (finished before with the same inputs)") == 6


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"filter": "no/such/filters.yaml"}, "pipeline.filter: no such file: no/such/filters.yaml"),
        ({"train": {"config": "no/such/train.yaml"}}, "pipeline.train.config: no such file"),
        ({"eval": {"config": "no/such/eval.yaml"}}, "pipeline.eval.config: no such file"),
        ({"filter": "BROKEN"}, "field 'filters'"),
    ],
)
def test_a_missing_or_broken_input_file_fails_before_any_stage(tmp_path, changes, message, capsys):
    replay = ([], None, "http://127.0.0.1:9")  # nothing may be asked: the check comes before generation
    if changes.get("filter") == "BROKEN":
        (tmp_path / "broken.yaml").write_text("filters: []\n")
        changes = {"filter": str(tmp_path / "broken.yaml")}
    path = write_pipeline(tmp_path, replay, **changes)
    assert main(["run", "-c", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_an_unknown_export_format_is_named_with_the_choices(tmp_path, capsys):
    path = tmp_path / "pipeline.yaml"
    path.write_text("pipeline:\n  export: {formats: [sharegtp]}\n")
    assert main(["run", "-c", str(path), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        f"field 'pipeline.export.formats': unknown format 'sharegtp' (formats: {', '.join(FORMATS)}, or all)"
    )
