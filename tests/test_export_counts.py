"""The export says when it ships task rows without a positive correctness check (issue 15)."""

from test_export import COA_KEPT, make_run

from factory.export import ExportOptions, export_dataset
from factory.store import Store


def test_rows_without_a_positive_correctness_check_are_counted_in_a_warning(tmp_path):
    run = make_run(tmp_path / "run")
    clean = export_dataset(run, tmp_path / "clean", ExportOptions(formats=["sharegpt"]))
    assert not any("correctness" in warning for warning in clean.warnings)  # every task row checked correct
    wrong, unchecked = sorted(COA_KEPT)[:2]
    with Store.open(run) as store:
        store.execute("UPDATE trajectories SET correct = false WHERE trajectory_id = ?", [wrong])
        store.execute("UPDATE trajectories SET correct = NULL WHERE trajectory_id = ?", [unchecked])
    result = export_dataset(run, tmp_path / "out", ExportOptions(formats=["sharegpt"]))
    [warning] = [warning for warning in result.warnings if "correctness" in warning]
    assert warning.startswith(
        f"2 of {len(COA_KEPT)} exported task rows have no positive correctness check (correct=false: 1, unchecked: 1)"
    )
