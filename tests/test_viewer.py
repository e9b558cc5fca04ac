"""`factory ls` and `factory show --random/--next` over a real run store with every path and failure kind."""

import json

import pytest
from test_export import KEPT, make_run

from factory.cli import main
from factory.export import ExportOptions
from factory.export.selection import kept_counts, open_store
from factory.refine.store import save_script, save_trajectory
from factory.store import Store
from factory.viewer.table import WIDTH

LONG = "goal requires unknown location 'garden' " + "and the world has no path there " * 8


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = make_run(tmp_path_factory.mktemp("viewer") / "run")
    with Store.open(run_dir) as store:
        save_script(store, "p1:0", "p1", 0, None, ["schema: action names repeat"])  # p1's first try; the second passed
        save_script(store, "p9:0", "p9", 0, None, ["length: the reply was cut off"])
        save_script(store, "p9:1", "p9", 1, None, [LONG, "unreachable goal"])
        row = {"trajectory_id": "refine:p9", "source": "refine", "persona_id": "p9", "script_id": None,
               "verified": False, "reason": "no verified script"}  # fmt: skip
        save_trajectory(store, row, None)
    return run_dir


def ls(run, *flags, capsys):
    assert main(["ls", str(run), *flags]) == 0
    return capsys.readouterr().out.splitlines()


def listed(run, *flags, capsys) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, ls(run, "--json", "--limit", "0", *flags, capsys=capsys))}


def test_every_trajectory_one_line_with_its_stats_and_reason_within_120_columns(run, capsys):
    lines = ls(run, capsys=capsys)
    assert lines[0].split() == ["id", "source", "ok", "export", "correct", "turns", "tools", "fixes", "reason"]
    assert all(len(line) <= WIDTH for line in lines)
    by_id = {line.split()[0]: line for line in lines[1:-1]}
    assert len(by_id) == 19 and "p9:1" not in by_id  # trajectories only: script rows come with --failed
    assert by_id["refine:p1"].split()[1:8] == ["refine", "yes", "kept", "-", "6", "3", "1"]
    assert "dropped by complexity: fewer than 2 corrections" in by_id["refine:p8"]
    assert "dropped by dedup: duplicate of coa:t2" in by_id["coa:t8"]
    assert by_id["coa:t2"].split()[1:5] == ["coa", "yes", "kept", "yes"]
    assert "no verified script (2 tries): goal requires unknown" in by_id["refine:p9"]
    assert by_id["refine:p9"].endswith("…")  # the long reason is cut to the table's width
    assert lines[-1] == f"19 of 19 rows; factory show {run} ID"


def test_kept_rows_are_the_rows_the_export_writes(run, capsys):
    kept = listed(run, "--kept", capsys=capsys)
    assert set(kept) == KEPT
    with open_store(run) as store:
        assert len(kept) == kept_counts(store, ExportOptions()).kept
    dropped = listed(run, "--dropped", capsys=capsys)
    assert set(dropped) == {"refine:p8", "coa:t8"} and all(row["verified"] for row in dropped.values())


def test_failed_lists_unverified_rows_and_failed_scripts_with_their_reasons(run, capsys):
    failed = listed(run, "--failed", capsys=capsys)
    assert set(failed) == {"refine:p7", "refine:p9", "coa:t7", "p1:0", "p9:0", "p9:1"}
    assert failed["coa:t7"]["reason"] == "grammar tag_in_text"
    assert failed["refine:p7"]["reason"] == "rule failed"
    assert failed["p1:0"] == {**failed["p1:0"], "source": "script", "reason": "schema: action names repeat"}
    assert failed["p9:1"]["reason"] == f"{LONG} (+1 more)"  # JSON keeps the reason whole
    assert ls(run, "--failed", capsys=capsys)[-1] == f"6 of 6 rows (--failed); factory show {run} ID"


def test_sample_is_seeded_and_counted_against_the_rows_it_came_from(run, capsys):
    first = ls(run, "--sample", "4", "--seed", "7", capsys=capsys)
    assert ls(run, "--sample", "4", "--seed", "7", capsys=capsys) == first
    assert len(first) == 6 and first[-1].startswith("4 of 19 rows, a sample of 4 (seed 7)")
    seeds = {tuple(ls(run, "--sample", "4", "--seed", str(seed), capsys=capsys)[1:-1]) for seed in range(5)}
    assert len(seeds) > 1
    assert ls(run, "--limit", "3", capsys=capsys)[-1] == f"3 of 19 rows; --limit 0 lists all; factory show {run} ID"


def test_where_is_a_predicate_over_trajectory_columns_and_a_bad_one_is_one_line(run, capsys):
    coa = listed(run, "--where", "source = 'coa' AND task_id <> 't1'", capsys=capsys)
    assert set(coa) == {"coa:t2", "coa:t3", "coa:t4", "coa:t5", "coa:t6", "coa:t7", "coa:t8"}
    assert main(["ls", str(run), "--where", "no_such_column > 1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --where 'no_such_column > 1' is not a usable predicate")
    assert main(["ls", str(run), "--where", "true; DELETE FROM trajectories"]) == 2
    assert capsys.readouterr().err.startswith("error: --where")
    assert len(listed(run, capsys=capsys)) == 19  # the store is untouched


def test_ls_of_a_folder_without_a_store_is_one_line(tmp_path, capsys):
    assert main(["ls", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {tmp_path}: not a run folder (no factory.sqlite); run factory refine or coa first"
    )


def test_show_next_walks_the_run_in_id_order_and_starts_over(run, capsys):
    (run / ".factory_show_cursor").unlink(missing_ok=True)
    ids = sorted(listed(run, capsys=capsys))
    seen = []
    for _ in range(len(ids) + 1):
        assert main(["show", str(run), "--next"]) == 0
        seen.append(capsys.readouterr().out.split()[0])
    assert seen == [*ids, ids[0]]
    assert main(["show", str(run), "coa:t5"]) == 0 and main(["show", str(run), "--next"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split()[0] != "coa:t5"
    assert (run / ".factory_show_cursor").read_text().strip() == "coa:t6"


def test_show_random_is_repeatable_with_a_seed(run, capsys):
    picks = set()
    for seed in (1, 1, 2, 3, 4, 5):
        assert main(["show", str(run), "--random", "--seed", str(seed)]) == 0
        picks.add((seed, capsys.readouterr().out.split()[0]))
    assert len({seed for seed, _ in picks}) == 5 and len(picks) == 5  # seed 1 picked the same row twice


@pytest.mark.parametrize("flags", [[], ["coa:t1", "--random"], ["--random", "--next"]])
def test_show_needs_exactly_one_way_to_pick(run, flags, capsys):
    assert main(["show", str(run), *flags]) == 2
    assert capsys.readouterr().err.strip() == "error: factory show needs one of: an ID, --random or --next"


def test_show_of_a_row_without_a_script_lists_each_script_attempt(run, capsys):
    assert main(["show", str(run), "refine:p9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "refine:p9  persona p9  not verified (no verified script)"
    assert lines[1] == "script p9:0 failed: length: the reply was cut off"
    assert lines[2] == f"script p9:1 failed: {LONG}; unreachable goal"
    assert main(["show", str(run), "coa:t8"]) == 0
    assert "filter dedup: dropped (duplicate of coa:t2)" in capsys.readouterr().out
