"""One truth for counts (issue 15): the report, the dataset card and the written files agree on what is kept.

A user saw the report say "kept 3/3, train 2 / validation 1" while the export wrote train 1 / validation 1: a
filter had judged an unverified row and the report counted it. Here a real store holds verified, unverified
(with a filter verdict that keeps them), filter-dropped and upsampled rows; each case exports, writes the card
and the report, and the three are read back from disk and compared.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from test_export import KEPT, make_run, verdict
from test_report_html import parse

from factory.errors import FactoryError
from factory.export import ExportOptions, export_dataset
from factory.reporting import write_report
from factory.reporting.command import add_report_parser
from factory.store import Store

UNVERIFIED = ["refine:p7", "coa:t7"]
DROPPED = ["refine:p8", "coa:t8"]


def split_filter(trajectory_id: str) -> str:
    """A split filter's choice, by task group (coa:t1 and coa:t1b share task t1)."""
    return "validation" if trajectory_id in ("coa:t1", "coa:t1b", "refine:p3") else "train"


@pytest.fixture(scope="module", params=["hash split", "split filter"])
def run(request, tmp_path_factory) -> Path:
    run_dir = make_run(tmp_path_factory.mktemp("counts") / "run")
    with Store.open(run_dir) as store:
        for trajectory_id in UNVERIFIED:  # the user's case: a filter kept a row that never passed verification
            verdict(store, trajectory_id, "complexity", True)
        if request.param == "split filter":
            for (trajectory_id,) in store.query("SELECT trajectory_id FROM trajectories"):
                verdict(store, trajectory_id, "split", True, split=split_filter(trajectory_id))
    return run_dir


def written_rows(folder: Path, file_type: str) -> Counter:
    """Rows per split of one format's files, read by DuckDB from disk (split taken from the file name)."""
    reader = "read_parquet" if file_type == "parquet" else "read_json_auto"
    counts: Counter = Counter()
    for path in sorted(folder.glob("*.parquet" if file_type == "parquet" else "*.jsonl")):
        (n,) = duckdb.connect().execute(f"SELECT count(*) FROM {reader}('{path}')").fetchone()
        counts[path.name.split("-")[0]] += n
    return counts


def written_ids(folder: Path, file_type: str) -> set[str]:
    reader = "read_parquet" if file_type == "parquet" else "read_json_auto"
    pattern = str(folder / ("*.parquet" if file_type == "parquet" else "*.jsonl"))
    return {row[0] for row in duckdb.connect().execute(f"SELECT id FROM {reader}('{pattern}')").fetchall()}


def card_counts(readme: str) -> tuple[int, int, dict[str, tuple[int, int]]]:
    """(kept, trajectories in the run, {split: (rows, trajectories)}) as the card's sentence states them."""
    kept, total = map(int, re.search(r"Kept (\d+) of (\d+) trajectories in the run", readme).groups())
    found = re.search(r"By split: (.*?); total weight", readme).group(1)
    splits = {
        name: (int(rows), int(trajectories))
        for name, rows, trajectories in re.findall(r"(\w+) (\d+) rows \((\d+) trajectories\)", found)
    }
    return kept, total, splits


def report_counts(html: str) -> tuple[dict[str, str], dict[str, tuple[int, int]]]:
    page = parse(html)
    (totals,) = page.tables["kept"]
    names = ["trajectories", "verified", "dropped", "unverified", "kept", "kept_weight"]
    splits = {name: (int(rows), int(trajectories)) for name, trajectories, rows in page.tables["splits"]}
    return dict(zip(names, totals, strict=True)), splits


@pytest.mark.parametrize("file_type", ["parquet", "jsonl"])
@pytest.mark.parametrize("upsample", ["none", "repeat"])
def test_report_card_and_files_agree(run, tmp_path, upsample, file_type):
    options = ExportOptions(formats=["messages", "afm"], validation=0.3, upsample=upsample, file_type=file_type)
    result = export_dataset(run, tmp_path / "out", options)
    report = write_report(run, tmp_path / "report.html", options)

    files = written_rows(tmp_path / "out" / "messages", file_type)
    assert written_ids(tmp_path / "out" / "messages", file_type) == KEPT  # never an unverified or dropped row
    copies = 2 if upsample == "repeat" else 1  # coa:t2 has weight 2
    assert sum(files.values()) == len(KEPT) - 1 + copies
    assert len(files) == 2, "both splits are non-empty in every case"

    kept, total, card_splits = card_counts((tmp_path / "out" / "README.md").read_text(encoding="utf-8"))
    totals, report_splits = report_counts(report.read_text(encoding="utf-8"))
    assert {name: rows for name, (rows, _) in card_splits.items()} == dict(files) == result.selected
    assert report_splits == card_splits
    assert kept == int(totals["kept"]) == len(KEPT)
    assert total == int(totals["trajectories"]) == len(KEPT) + len(UNVERIFIED) + len(DROPPED)
    assert (int(totals["unverified"]), int(totals["dropped"])) == (len(UNVERIFIED), len(DROPPED))
    assert float(totals["kept_weight"]) == len(KEPT) + 1  # the upsampled row weighs 2, copies or not
    tile = re.search(
        r'<div class="k">kept \(exported\)</div><div class="v">([\d,]+) / ([\d,]+)</div>',
        report.read_text(encoding="utf-8"),
    )
    assert tile.groups() == (str(len(KEPT)), str(total))


def test_afm_files_hold_the_kept_task_rows_of_each_split(run, tmp_path):
    """A format that holds a subset (AFM: coa/import rows) never holds more than the selection's split."""
    options = ExportOptions(formats=["messages", "afm"], validation=0.3)
    export_dataset(run, tmp_path / "out", options)
    afm, messages = (written_rows(tmp_path / "out" / name, "parquet") for name in ("afm", "messages"))
    assert written_ids(tmp_path / "out" / "afm", "parquet") == {i for i in KEPT if not i.startswith("refine")}
    assert all(afm[split] <= messages[split] for split in afm)


def test_report_command_takes_the_exports_split_options(run, tmp_path, capsys):
    """`factory report --validation --upsample` counts what `factory export` with the same flags writes."""
    parser = argparse.ArgumentParser()
    add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", str(run), "--out", str(tmp_path / "r.html"), "--validation", "0.3",
                              "--upsample", "repeat", "--seed", "other"])  # fmt: skip
    assert args.func(args) == 0
    result = export_dataset(
        run, tmp_path / "out", ExportOptions(formats=["messages"], validation=0.3, upsample="repeat")
    )
    _, splits = report_counts((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert {name: rows for name, (rows, _) in splits.items()} == result.selected
    bad = parser.parse_args(["report", str(run), "--validation", "2"])
    with pytest.raises(FactoryError, match="validation"):
        bad.func(bad)
