"""What reruns a stage of `factory run`: settings of what a stage makes, never settings of how it is made.

The fingerprints are compared directly for every stage kind (no stage runs), then a
refine → filter → export → report → train pipeline over the recorded replies is run
again with how-settings changed, a later stage changed, an output setting changed, and
with the data under a finished training changed (issue 28: a timeout change reran
every stage and training "resumed" to print `train loss None`).
"""

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from test_pipeline import REPO, run, serve_replay, write_pipeline

from factory.cli import main
from factory.coa.config import CoaConfig
from factory.llm.config import LLMConfig
from factory.pipeline.expand_stage import ExpandStage
from factory.pipeline.ledger import HOW_NOT_WHAT, without_how
from factory.pipeline.stages import Context, all_stages, stage_fingerprint
from factory.run_config import FactoryConfig

STAGES = ["refine", "filter", "export", "report", "train"]
SKIPPED = "skipped (finished before with the same inputs)"
HOW = {"timeout_s": 900, "local": {"threads": 3, "n_ctx": 4096, "n_parallel": 2, "startup_timeout_s": 600},
       "concurrency": 2, "max_retries": 9, "backoff_max_s": 5, "rpm": 600, "stream": True, "transport": "openai",
       "cache": False, "api_key_env": "SOME_KEY", "max_cost_usd": 50, "batch": {"poll_interval_s": 5}}  # fmt: skip


def prints(tmp_path: Path, **sections) -> dict[str, str]:
    """Every stage's fingerprint for a config with every stage kind, `sections` merged over it."""
    base = {
        "run_dir": str(tmp_path / "run"),
        "llm": {"model": "m", "base_url": "http://127.0.0.1:9/v1"},
        "coa": {"tasks": str(tmp_path / "tasks.jsonl"), "tools": {"web_search": {"enabled": True, "backend": "http",
                "http": {"endpoint": "http://127.0.0.1:9/search"}}}},
        "passrate": {"tasks": str(tmp_path / "tasks.jsonl")},
        "pipeline": {"expand": {"out": str(tmp_path / "tasks.jsonl"), "closed_book": {"model": "m"}},
                     "generate": ["refine", "coa"], "passrate": {"policy": {"model": "p"}},
                     "filter": str(REPO / "examples" / "filters.yaml"),
                     "train": {"config": str(REPO / "examples" / "train_tiny.yaml")}, "eval": {}},
    }  # fmt: skip
    config = FactoryConfig(**merged(base, sections))
    context, found = Context(config, progress=False), {}
    for stage in all_stages(config.pipeline):
        found[stage.name] = stage_fingerprint(stage, context, list(found.values()))
    return found


def merged(base: dict, changes: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        out[key] = merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def test_how_settings_leave_every_fingerprint_as_it_was(tmp_path):
    before = prints(tmp_path)
    policy = {"model": "p", "timeout_s": 1, "concurrency": 1, "local": {"threads": 1}}
    search = {"timeout_s": 60, "max_retries": 5, "backoff_s": 2, "api_key_env": "K"}
    after = prints(
        tmp_path,
        llm=HOW,
        coa={"parallel_tasks": 64, "tools": {"web_search": {"http": search}, "crawl_page": {"timeout_s": 60}}},
        pipeline={"passrate": {"policy": policy}, "expand": {"closed_book": {"concurrency": 1, "run_dir": "x"}}},
    )
    assert list(before) == ["expand", "refine", "coa", "passrate", "filter", "export", "report", "train", "eval"]
    assert after == before


@pytest.mark.parametrize(
    "changes, first",
    [
        ({"refine": {"count": 9}}, "refine"),
        ({"llm": {"model": "other"}}, "refine"),
        ({"llm": {"temperature": 0.1}}, "refine"),
        ({"llm": {"local": {"n_ctx": 4096}, "max_parse_retries": 5}}, "refine"),  # a re-ask makes another row
        ({"coa": {"max_steps": 3}}, "coa"),
        ({"coa": {"task_timeout_s": 5}}, "coa"),  # a rerun resumes the tasks it cut off
        ({"pipeline": {"passrate": {"policy": {"model": "p", "temperature": 0.2}}}}, "passrate"),
        ({"pipeline": {"export": {"file_type": "jsonl"}}}, "export"),
        ({"pipeline": {"eval": {"limit": 2}}}, "eval"),
    ],
)
def test_an_output_setting_changes_its_stage_and_the_later_ones_but_never_the_earlier(tmp_path, changes, first):
    before, after = prints(tmp_path), prints(tmp_path, **changes)
    names = list(before)
    changed = [name for name in names if after[name] != before[name]]
    later = names[names.index(first) :]
    # train reads only its config and the exported files (none here): upstream settings never reach it
    assert changed == [name for name in later if name != "train"], changed


def test_train_chains_on_the_exported_bytes_and_not_on_run_control(tmp_path):
    base = prints(tmp_path)
    shards = tmp_path / "run" / "export" / "sharegpt"
    shards.mkdir(parents=True)
    (shards / "train-00000.parquet").write_bytes(b"rows")
    with_data = prints(tmp_path)
    assert with_data["train"] != base["train"] and with_data["export"] == base["export"]
    (shards / "train-00000.parquet").write_bytes(b"other rows")
    assert prints(tmp_path)["train"] != with_data["train"]
    run_control = {"save_steps": 5, "log_steps": 2, "eval_steps": 3, "resume": False}
    assert prints(tmp_path, pipeline={"train": {"overrides": run_control}})["train"] == prints(tmp_path)["train"]
    assert prints(tmp_path, pipeline={"train": {"overrides": {"optim.max_steps": 3}}})["train"] != base["train"]


def test_every_how_not_what_path_names_a_real_setting():
    """A renamed field would silently stay in the fingerprint: each listed path must exist in the models."""
    search = {"http": {"endpoint": "http://h/"}, "local": {"path": "corpus.jsonl"}}
    sections = {"llm": LLMConfig(), "coa": CoaConfig(tools={"web_search": search})}
    dumps = {name: model.model_dump(mode="json") for name, model in sections.items()}
    dumps["pipeline.expand"] = ExpandStage(out="t.jsonl", closed_book={"model": "m"}).model_dump(mode="json")
    for path in HOW_NOT_WHAT:
        root = next(root for root in dumps if path.startswith(root + "."))
        holder = dumps[root]
        for key in path[len(root) + 1 :].split("."):
            assert isinstance(holder, dict) and key in holder, path
            holder = holder[key]
        assert without_how(dumps[root], root) != dumps[root]


# --- the pipeline run again ------------------------------------------------------------------------------------

replay = pytest.fixture(scope="module")(serve_replay)


TRAIN = {"config": str(REPO / "examples" / "train_tiny.yaml"),
         "overrides": {"optim.max_steps": 2, "optim.grad_accum": 1, "optim.batch_size": 1, "save_steps": 0}}  # fmt: skip


def configure(folder: Path, replay, llm: dict | None = None, **pipeline) -> Path:
    defaults = {"publish": None, "eval": None, "train": TRAIN}
    path = write_pipeline(folder, replay, **{**defaults, **pipeline})
    config = yaml.safe_load(path.read_text())
    config["llm"].update(llm or {})
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def finished(replay, tmp_path_factory):
    """One finished pipeline; each test starts from a copy of its run folder, restored in the same place."""
    folder = tmp_path_factory.mktemp("fingerprints")
    assert main(["run", "-c", str(configure(folder, replay)), "-q"]) == 0
    shutil.copytree(folder / "run", folder / "snapshot")
    return folder


@pytest.fixture
def again(finished, replay):
    shutil.rmtree(finished / "run")
    shutil.copytree(finished / "snapshot", finished / "run")
    return finished, len(replay[1].requests)


def metrics(folder: Path) -> dict:
    return json.loads((folder / "run" / "train" / "metrics.json").read_text())


def test_timeouts_threads_and_concurrency_rerun_nothing(again, replay, capsys):
    folder, requests = again
    code, out, _ = run(configure(folder, replay, llm=HOW), capsys)
    assert code == 0, out
    assert [name for name in STAGES if f"{name}: {SKIPPED}" in out] == STAGES
    assert len(replay[1].requests) == requests


def test_a_later_stage_setting_reruns_only_that_stage_and_training_starts_fresh(again, replay, capsys):
    folder, requests = again
    train = {**TRAIN, "overrides": {**TRAIN["overrides"], "optim.max_steps": 1}}
    code, out, _ = run(configure(folder, replay, train=train), capsys)
    assert code == 0, out
    assert [name for name in STAGES if f"{name}: {SKIPPED}" in out] == STAGES[:-1]
    assert "removed 1 checkpoint(s) made from other data or another config: checkpoint-2" in out
    assert "resumed from" not in out and metrics(folder)["steps"] == 1
    assert not (folder / "run" / "train" / "checkpoint-2").exists()  # eval would have played the old model
    assert isinstance(metrics(folder)["train_loss"], float) and len(replay[1].requests) == requests


def test_an_output_setting_reruns_its_stage_and_what_follows_but_not_the_same_training(again, replay, capsys):
    folder, requests = again
    code, out, _ = run(configure(folder, replay, llm={"temperature": 0.2}), capsys)
    assert code == 0, out
    ran = [name for name in STAGES if f"== {STAGES.index(name) + 1}/5 {name}\n" in out]
    assert ran == ["refine", "filter", "export", "report"]
    assert f"train: {SKIPPED}" in out  # the export wrote the same bytes: nothing new to train on
    assert len(replay[1].requests) == requests  # every persona was finished: refine asked nothing again


def test_other_exported_data_retrains_from_scratch(again, replay, capsys):
    folder, _ = again
    first = metrics(folder)
    code, out, _ = run(configure(folder, replay, export={"formats": ["sharegpt"], "validation": 0.5}), capsys)
    assert code == 0, out
    assert f"export: {SKIPPED}" not in out and f"train: {SKIPPED}" not in out
    assert "removed 1 checkpoint(s)" in out and "resumed from" not in out
    assert metrics(folder)["data_hash"] != first["data_hash"] and metrics(folder)["history"]


def test_a_training_resumed_at_its_last_step_reports_the_loss_it_recorded(again, replay, capsys):
    folder, _ = again
    first = metrics(folder)
    (folder / "run" / "train" / "metrics.json").unlink()  # its output gone: the stage runs again
    code, out, _ = run(configure(folder, replay), capsys)
    assert code == 0, out
    assert "train: its output is gone since it finished; running it again" in out
    assert "resumed from" in out and "removed 1 checkpoint" not in out
    assert f"train loss {first['train_loss']}," in out and metrics(folder)["train_loss"] == first["train_loss"]
    assert f'"train_loss": {first["train_loss"]}' in out
