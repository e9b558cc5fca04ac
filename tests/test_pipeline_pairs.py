"""The pipeline's pairs stage and the world-model export (issue 29) as `factory run` wires them.

No stage runs here: the configured stages, their order and fingerprints, and what the train stage is told.
"""

import pytest
from test_pipeline import REPO
from test_pipeline_fingerprints import prints

from factory.errors import ConfigError
from factory.pipeline.stages import Context
from factory.pipeline.train_stage import train_values
from factory.run_config import FactoryConfig


def test_pairs_run_after_passrate_and_rerun_when_their_settings_change(tmp_path):
    before = prints(tmp_path, pipeline={"pairs": True})
    assert list(before)[3:6] == ["passrate", "pairs", "filter"]
    after = prints(tmp_path, pipeline={"pairs": True}, pairs={"min_pass_rate": 0.9})
    assert [name for name in before if before[name] != after[name]][0] == "pairs"  # the earlier ones stay


def test_pairs_need_the_coa_path(tmp_path):
    with pytest.raises((ConfigError, ValueError), match="pairs are made from coa trajectories"):
        FactoryConfig(run_dir=str(tmp_path), pipeline={"generate": ["refine"], "pairs": True})


@pytest.mark.parametrize("observations, told", [("mask", None), ("train", True)])
def test_the_train_stage_trains_the_observations_the_export_flagged(tmp_path, observations, told):
    train = {"config": str(REPO / "examples/train_tiny.yaml"), "format": "messages"}
    pipeline = {"export": {"observations": observations}, "train": train}
    context = Context(FactoryConfig(run_dir=str(tmp_path), pipeline=pipeline), progress=False)
    assert train_values(context).get("data.train_on_observations") == told


@pytest.mark.parametrize(
    "export, train_format, said",
    [
        ({}, "preference", "train.format preference holds preference pairs"),
        ({"observations": "train"}, "sharegpt", "train.format sharegpt cannot train observations"),
    ],
)
def test_the_train_stage_refuses_rows_it_would_not_train_as_asked(tmp_path, export, train_format, said):
    train = {"config": str(REPO / "examples/train_tiny.yaml"), "format": train_format}
    with pytest.raises((ConfigError, ValueError), match=said):
        FactoryConfig(run_dir=str(tmp_path), pipeline={"export": export, "train": train})
