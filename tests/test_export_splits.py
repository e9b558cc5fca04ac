"""The export's hash split keeps both splits non-empty whenever there are two task groups, moving whole groups."""

import pytest
from filter_rows import add_refine, write_config

from factory.export.options import ExportOptions
from factory.export.selection import SMALL_RUN_ROWS, kept_counts, selection_sql
from factory.filters.runner import run_filters
from factory.store import Store


def split_of(store: Store, validation: float) -> dict[str, set[str]]:
    groups: dict[str, set[str]] = {}
    sql = selection_sql(ExportOptions(validation=validation))
    for split, group in store.query(f"SELECT split, group_key FROM ({sql})"):
        groups.setdefault(split, set()).add(group)
    return groups


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "run") as store:
        yield store


@pytest.mark.parametrize("groups", [2, 3, 5])
@pytest.mark.parametrize("validation", [0.01, 0.05, 0.34, 0.5])
def test_a_few_groups_always_fill_both_splits(store, groups, validation):
    for i in range(groups):
        add_refine(store, f"p{i}", f"task {i}", i)
    split = split_of(store, validation)
    assert set(split) == {"train", "validation"}, split
    assert split["train"].isdisjoint(split["validation"])


@pytest.mark.parametrize("validation", [0.05, 0.34, 0.5])
def test_a_lone_group_stays_in_train(store, validation):
    for persona in ("p0", "p1", "p2", "p3"):
        add_refine(store, persona, "task", 0, script_id="script:shared")  # four rows, one task group
    assert split_of(store, validation) == {"train": {"script:shared"}}


def test_a_large_run_splits_by_the_share_alone(store):
    """Past SMALL_RUN_ROWS kept rows the cut is the share itself: no search, and 2 % of groups stay 2 %."""
    store.insert_query(
        "trajectories",
        f"""SELECT 'coa:' || i AS trajectory_id, 'coa' AS source, 't' || i AS task_id,
                                          true AS verified FROM range({SMALL_RUN_ROWS + 5}) r(i)""",
    )
    counts = kept_counts(store, ExportOptions(validation=0.02)).split_trajectories
    assert 0.015 < counts["validation"] / (SMALL_RUN_ROWS + 5) < 0.025


def test_no_validation_share_means_no_validation_split(store):
    for i in range(4):
        add_refine(store, f"p{i}", f"task {i}", i)
    assert set(split_of(store, 0.0)) == {"train"}


def test_many_groups_follow_the_hash_share(store):
    for i in range(400):
        add_refine(store, f"p{i}", f"task {i}", i)
    counts = kept_counts(store, ExportOptions(validation=0.25)).split_trajectories
    assert 70 <= counts["validation"] <= 130, counts  # about a quarter: the guarantee does not move groups here


def test_a_split_filter_wins_over_the_hash(tmp_path):
    with Store.open(tmp_path / "run") as store:
        for i in range(3):
            add_refine(store, f"p{i}", f"task {i}", i)
    run_filters(tmp_path / "run", write_config(tmp_path, "filters: [{name: s, kind: split, splits: {sft: 1.0}}]"))
    with Store.open(tmp_path / "run", read_only=True) as store:
        assert set(split_of(store, 0.34)) == {"sft"}
