"""Checkpoints saved again: a finished run run again saves nothing; a save over an old one unmarks it first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
for extra in ("transformers", "accelerate"):
    pytest.importorskip(extra)

from transformers import PreTrainedModel  # noqa: E402

from train.checkpoint import META_FILE, last_checkpoint  # noqa: E402
from train.config import load_config  # noqa: E402
from train.sft import fit  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def write_run(folder: Path) -> Path:
    rows = [{"id": f"m{i}", "messages": [{"role": "user", "content": f"Count to {i}."},
                                         {"role": "assistant", "content": " ".join(map(str, range(i + 1)))}]}
            for i in range(8)]  # fmt: skip
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = {"model": {"path": "tiny:qwen2"},
              "data": {"train": [str(folder / "rows.jsonl")], "validation_fraction": 0, "max_seq_length": 64},
              "optim": {"learning_rate": 1e-3, "warmup_steps": 0, "batch_size": 2, "grad_accum": 1, "max_steps": 3},
              "output_dir": str(folder / "out"), "save_steps": 0, "log_steps": 1}  # fmt: skip
    path = folder / "sft.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("finished")
    fit(load_config(write_run(folder)))
    assert (folder / "out" / "checkpoint-3" / META_FILE).is_file()
    return folder


class Killed(RuntimeError):
    """The process died in the middle of writing the weights."""


def killed_while_saving(self, *args, **kwargs):
    raise Killed


def copy_of(finished: Path, tmp_path: Path) -> Path:
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


def test_running_a_finished_training_again_saves_nothing(finished, tmp_path, monkeypatch, capsys):
    folder = copy_of(finished, tmp_path)
    config = load_config(folder / "sft.yaml", ["--output_dir", str(folder / "out")])
    checkpoint = folder / "out" / "checkpoint-3"
    before = {p.name: p.stat().st_mtime_ns for p in checkpoint.rglob("*") if p.is_file()}
    monkeypatch.setattr(PreTrainedModel, "save_pretrained", killed_while_saving)
    metrics, _ = fit(config)  # before the fix: re-saved into checkpoint-3 under its old marker, and was killed
    assert "resumed from" in capsys.readouterr().out
    assert metrics["steps"] == 3 and metrics["checkpoint"] == str(checkpoint) and metrics["history"] == []
    assert {p.name: p.stat().st_mtime_ns for p in checkpoint.rglob("*") if p.is_file()} == before


def test_a_save_over_an_old_checkpoint_killed_halfway_does_not_look_complete(finished, tmp_path, monkeypatch):
    folder = copy_of(finished, tmp_path)
    config = load_config(folder / "sft.yaml", ["--output_dir", str(folder / "out"), "--resume", "false"])
    monkeypatch.setattr(PreTrainedModel, "save_pretrained", killed_while_saving)
    with pytest.raises(Killed):
        fit(config)  # trains 3 steps from scratch, then dies saving over the old checkpoint-3
    assert not (folder / "out" / "checkpoint-3" / META_FILE).exists()
    assert last_checkpoint(folder / "out") is None  # nothing to resume from: never the half-written folder
    monkeypatch.undo()
    metrics, _ = fit(config)
    assert (folder / "out" / "checkpoint-3" / META_FILE).is_file() and metrics["history"][-1]["step"] == 3
