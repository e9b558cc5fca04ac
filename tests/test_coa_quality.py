"""The coa/import quality figures (`factory quality`, the report's quality section) over a real store, every figure exact."""

from __future__ import annotations

import json
import re

import pytest
from coa_quality_rows import seed_quality_run

from factory.cli import main
from factory.reporting import write_report
from factory.reporting.coa_quality import coa_quality, format_coa_quality
from factory.store import Store


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return seed_quality_run(tmp_path_factory.mktemp("coa_quality") / "run")


@pytest.fixture(scope="module")
def figures(run_dir):
    with Store.open(run_dir, read_only=True) as store:
        return coa_quality(store)


def test_openings_of_thoughts_and_reflections(figures):
    assert figures["rows"] == 5  # verified coa/import rows; the unverified one and the refine rows are not read
    think, reflection = figures["openings"]["think"], figures["openings"]["reflection"]
    assert (think["blocks"], think["rows"], reflection["blocks"], reflection["rows"]) == (14, 5, 9, 5)
    assert think["top_3"][:2] == [
        {"opening": "so the answer", "blocks": 3, "share_blocks": 0.2143, "rows": 3, "share_rows": 0.6},
        {"opening": "i will search", "blocks": 2, "share_blocks": 0.1429, "rows": 2, "share_rows": 0.4},
    ]
    assert reflection["top_3"][0] == {"opening": "this result shows", "blocks": 3, "share_blocks": 0.3333,
                                      "rows": 2, "share_rows": 0.4}  # fmt: skip
    # Four words split the reflections of a ("... the river", "... the city") from b's ("... a date").
    assert reflection["top_4"][0] == {"opening": "this result shows the", "blocks": 2, "share_blocks": 0.2222,
                                      "rows": 1, "share_rows": 0.2}  # fmt: skip
    assert all(o["blocks"] == 1 for o in reflection["top_3"][1:]) and len(reflection["top_3"]) == 5
    # Rating lines are not part of an opening: no reflection opens with a criterion's name.
    assert not any("conflict" in o["opening"] or "good" in o["opening"] for o in reflection["top_3"])


def test_recall_tool_calls_grounding_and_distiller_phrases(figures):
    assert figures["answer_before_tool"] == {"rows_known": 4, "recalled": 1, "share": 0.25}
    # d records no tool calls: its three tool blocks count; u's 9 calls would stretch the histogram.
    assert figures["tool_calls"] == {"histogram": {1: 2, 2: 0, 3: 2, 4: 0, 5: 0, 6: 1}, "median": 3, "rows": 5}
    assert figures["grounding"] == {"rows_known": 4, "claims": 9, "grounded": 7, "share": 0.7778,
                                    "rows_all_grounded": 2, "share_rows_all_grounded": 0.5}  # fmt: skip
    assert figures["distiller_phrases"] == {
        "rows": 2,
        "by_phrase": {"Checking it:": 1, "Revised plan:": 0, "A first answer,": 1, "did not hold up": 1},
    }


def test_the_text_summary(figures):
    text = format_coa_quality(figures)
    assert text.startswith("coa quality (5 verified coa/import trajectories read)")
    assert '"this result shows" 3/9 blocks (33.3%), 2/5 rows (40.0%)' in text
    assert "answer written before the first tool: 1/4 rows (25.0%; rows that do not record it: 1)" in text
    assert "tool calls per trajectory (calls: rows): 1: 2, 2: 0, 3: 2, 4: 0, 5: 0, 6: 1; median 3" in text
    assert "grounded claims: 7/9 (77.8%); rows with every claim grounded: 2/4 (50.0%" in text
    assert 'distiller-inserted phrases (should be 0): 2 rows ("Checking it:" 1, "A first answer," 1' in text


def test_an_empty_store(tmp_path):
    with Store.open(tmp_path / "empty") as store:
        empty = coa_quality(store)
    assert empty["rows"] == 0 and empty["tool_calls"] == {"histogram": {}, "median": None, "rows": 0}
    assert empty["grounding"]["share"] is None and empty["openings"]["think"]["top_3"] == []
    assert format_coa_quality(empty) == "coa quality: no verified coa/import trajectories"


def test_the_quality_command_reports_both_paths(run_dir, figures, capsys):
    assert main(["quality", str(run_dir), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["verified"] == 2  # refine's figures stay at the top
    assert printed["coa"] == json.loads(json.dumps(figures))
    assert main(["quality", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("refine quality (2 verified trajectories)") and format_coa_quality(figures) in out


def cells(html: str, name: str) -> list[list[str]]:
    body = re.search(rf'<table data-table="{name}">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_the_report_shows_the_same_figures(run_dir, tmp_path):
    html = write_report(run_dir, tmp_path / "report.html").read_text(encoding="utf-8")
    quality = html[html.index('<section id="quality">') : html.index("</section>", html.index('id="quality"'))]
    assert "Chain-of-Agents (coa, import)" in quality and 'data-chart="coa-openings"' in quality
    openings = cells(quality, "coa-openings")
    assert ["reflection", "3", "this result shows", "3", "33.3%", "2", "40.0%"] in openings
    assert ["think", "4", "so the answer is", "3", "21.4%", "3", "60.0%"] in openings
    assert cells(quality, "coa-tool-calls") == [["1", "2"], ["2", "0"], ["3", "2"], ["4", "0"], ["5", "0"], ["6", "1"]]
    assert cells(quality, "coa-grounding") == [["4", "9", "7", "77.8%", "2", "50.0%"]]
    assert cells(quality, "coa-recalled") == [["4", "1", "25.0%"]]
    assert ["Checking it:", "1"] in cells(quality, "coa-distiller-phrases")
