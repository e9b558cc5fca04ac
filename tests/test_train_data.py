"""train.data: the held-out split keeps task groups whole, row weights must be finite."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from factory.errors import FactoryError  # noqa: E402
from factory.mask.tiny import tiny_tokenizer  # noqa: E402
from train.config import DataSection  # noqa: E402
from train.data import group_key, load_training_data, render_rows, row_weight, split_holdout  # noqa: E402


def row(i: int, task_id: str | None = None, script_id: str | None = None, row_id: str | None = None) -> tuple:
    data = {
        "id": row_id or f"r{i}",
        "task_id": task_id,
        "script_id": script_id,
        "weight": 1.0,
        "messages": [{"role": "user", "content": f"Say {i}."}, {"role": "assistant", "content": f"{i}."}],
    }
    return f"train.jsonl:{i + 1}", data


def export_like_rows() -> list[tuple]:
    """What an export with --upsample repeat looks like: ids written 3 times, tasks with several trajectories."""
    rows = []
    for t in range(12):
        rows += [row(len(rows), task_id=f"t{t}", row_id=f"coa:t{t}") for _ in range(3)]  # one trajectory, 3 copies
        rows.append(row(len(rows), task_id=f"t{t}", row_id=f"coa:t{t}b"))  # a sibling of the same task
    rows += [row(len(rows) + k, script_id=f"s{k % 4}") for k in range(8)]  # refine rows: grouped by script
    rows += [row(len(rows) + k, row_id="lonely") for k in range(3)]  # no task, no script: by id
    return rows


def keys_of(rows: list[tuple]) -> set[str]:
    return {group_key(data, where) for where, data in rows}


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_holdout_keeps_copies_and_siblings_on_one_side(seed):
    rows = export_like_rows()
    train, held = split_holdout(rows, 0.25, seed)
    assert held and train and len(train) + len(held) == len(rows)
    assert not keys_of(train) & keys_of(held)  # no task, script or id on both sides
    assert not {d["id"] for _, d in train} & {d["id"] for _, d in held}
    assert abs(len(held) - 0.25 * len(rows)) <= 4  # about the fraction: within one group of it
    assert split_holdout(rows, 0.25, seed) == (train, held)  # the seed decides, nothing else


def test_holdout_groups_by_task_then_script_then_id():
    assert group_key({"id": "a", "task_id": "t", "script_id": "s"}, "f:1") == "task_id:t"
    assert group_key({"id": "a", "task_id": None, "script_id": "s"}, "f:1") == "script_id:s"
    assert group_key({"id": "a", "task_id": "", "script_id": None}, "f:1") == "id:a"
    assert group_key({"conversations": []}, "f:7") == "row:f:7"
    seeds = {tuple(d["id"] for _, d in split_holdout(export_like_rows(), 0.25, seed)[1]) for seed in range(6)}
    assert len(seeds) > 1  # another seed, other groups


def test_holdout_with_one_group_or_no_fraction_holds_nothing_out():
    same_task = [row(i, task_id="t") for i in range(5)]
    assert split_holdout(same_task, 0.5, 0) == (same_task, [])
    two = [row(0, task_id="a"), row(1, task_id="b")]
    train, held = split_holdout(two, 0.9, 0)
    assert len(train) == 1 and len(held) == 1  # at least one group held out, at least one trains
    assert split_holdout(export_like_rows(), 0.0, 0)[1] == []


def test_load_training_data_holds_out_whole_groups(tmp_path):
    rows = export_like_rows()
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(data) + "\n" for _, data in rows), encoding="utf-8")
    data = load_training_data(DataSection(train=[str(path)], validation_fraction=0.2), tiny_tokenizer(), seed=3)
    assert not {e.row_id for e in data.train} & {e.row_id for e in data.validation}
    assert len(data.train) + len(data.validation) == len(rows) and data.validation


@pytest.mark.parametrize("weight", [math.nan, math.inf, -math.inf, -1.0, True, "2"])
def test_a_weight_that_is_not_a_finite_number_at_least_zero_is_refused(weight):
    where, data = row(0)
    with pytest.raises(FactoryError) as caught:
        row_weight({**data, "weight": weight}, where)
    message = str(caught.value)
    assert message.startswith("train.jsonl:1: field 'weight' must be a finite number >= 0") and "\n" not in message


def test_a_nan_weight_stops_rendering_with_the_file_and_line():
    rows = [row(0), (row(1)[0], {**row(1)[1], "weight": math.nan})]
    with pytest.raises(FactoryError, match=r"^train.jsonl:2: field 'weight'"):
        render_rows(rows, tiny_tokenizer(), DataSection(train=["x"]), Counter())
    assert row_weight({"weight": 0}, "w") == 0.0 and row_weight({"weight": 2.5}, "w") == 2.5


def test_a_validation_glob_that_matches_nothing_says_how_to_fall_back(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps(row(0)[1]) + "\n", encoding="utf-8")
    section = DataSection(train=[str(tmp_path / "train.jsonl")], validation=[str(tmp_path / "validation-*.parquet")])
    with pytest.raises(FactoryError, match=r"^data.validation: '.*validation-\*.parquet' matches no file .*'\[\]'"):
        load_training_data(section, tiny_tokenizer(), seed=0)


def test_without_validation_rows_the_data_says_why(tmp_path):
    """A one-task export has nothing to hold out: `factory train` prints why there is no eval loss (issue 28)."""
    one_task = [(where, {**data, "task_id": "t"}) for where, data in export_like_rows()]
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(data) + "\n" for _, data in one_task), encoding="utf-8")
    data = load_training_data(DataSection(train=[str(path)], validation_fraction=0.2), tiny_tokenizer(), seed=3)
    assert not data.validation and "hold 1 task group(s)" in data.no_validation
    none = load_training_data(DataSection(train=[str(path)], validation_fraction=0.0), tiny_tokenizer(), seed=3)
    assert "validation_fraction is 0" in none.no_validation
    rows = export_like_rows()
    path.write_text("".join(json.dumps(data) + "\n" for _, data in rows), encoding="utf-8")
    held = load_training_data(DataSection(train=[str(path)], validation_fraction=0.2), tiny_tokenizer(), seed=3)
    assert held.validation and held.no_validation is None
