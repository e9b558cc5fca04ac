"""`factory report`: a real run store with rows in every table it reads, rendered to HTML and in chromium."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import struct
import subprocess
import zlib
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_refine_quality import GARDEN, ROWS, turns_of

from factory.errors import FactoryError
from factory.reporting import write_report
from factory.reporting.command import add_report_parser
from factory.reporting.sql import float_histogram, int_histogram
from factory.reporting.svg import COLORS
from factory.store import Store

T0 = datetime(2025, 5, 1, 12, 0, 0)
SECTIONS = (
    "overview",
    "funnel",
    "failures",
    "samples",
    "shape",
    "errors",
    "quality",
    "pass-rate",
    "eval",
    "usage",
    "latency",
)

LOCAL, MINI = "local", "openai/gpt-4o-mini"
CALL_KEYS = "request_hash stage model status error_kind prompt_tokens completion_tokens cost_usd latency_s"
CALLS = [
    ("h1", "script", LOCAL, "ok", None, 900, 300, None, 1.0),
    ("h2", "script", LOCAL, "ok", None, 800, 200, None, 3.0),
    ("h3", "script", LOCAL, "error", "schema", 700, 100, None, 2.0),
    ("h4", "trajectory", LOCAL, "ok", None, 1500, 600, None, 6.0),
    ("h5", "trajectory", LOCAL, "error", "timeout", 0, 0, None, 30.0),
    ("h6", "coa.planner", MINI, "ok", None, 400, 50, 0.0012, 0.5),
    ("h7", "coa.planner", MINI, "error", "rate_limit", 0, 0, None, 0.2),
    ("h8", "coa.planner", MINI, "error", "rate_limit", 0, 0, None, 0.3),
    ("h9", "coa.planner", MINI, "ok", None, 420, 60, 0.0013, 0.9),
]


def insert(store: Store, table: str, keys: str, rows: list[tuple]) -> None:
    store.insert_rows(table, {key: [row[i] for row in rows] for i, key in enumerate(keys.split())})


def refine_row(persona: str, script: bool, turns: int = 0, errors: dict | None = None, corrections: int = 0):
    """A refine trajectory; turns=0 means it failed (no turns, empty stats), as the pipeline writes it."""
    stats = {"turns": turns, "assistant_turns": turns // 2, "errors": sum(errors.values()), "errors_by_type": errors,
             "corrections": corrections} if turns else {}  # fmt: skip
    return (f"refine:{persona}", "refine", persona, f"{persona}#0" if script else None, bool(turns),
            json.dumps(stats), stats.get("turns"), stats.get("errors"), stats.get("corrections"))  # fmt: skip


def coa_row(trace: str, source: str, rule: str | None = None, correct: bool | None = None, tools: dict | None = None,
            failures: int = 0, replans: int = 0):  # fmt: skip
    """A coa/import trajectory: distilled (tools given) or a failure by `rule`; 2 turns per tool call + 3."""
    stats = {"tool_calls": sum(tools.values()), "tool_calls_by_type": tools, "tool_failures": failures,
             "replans": replans, "poor_reflections": 0} if tools else {}  # fmt: skip
    return (trace, trace, f"task-{trace}", source, rule is None, rule, correct, json.dumps(stats),
            2 * sum(tools.values()) + 3 if tools else None)  # fmt: skip


def build_sample_store(run_dir: Path) -> None:
    """Both paths, imported logs, filters, rollouts and a call log with failures: every table the report reads."""
    with Store.open(run_dir) as store:
        insert(
            store,
            "runs",
            "run_id command status started_at finished_at",
            [
                ("r-refine", "refine", "done", T0, T0 + timedelta(minutes=12, seconds=5)),
                ("r-coa", "coa", "failed", T0 + timedelta(hours=1), T0 + timedelta(hours=1, minutes=3)),
            ],
        )
        insert(
            store,
            "scripts",
            "script_id persona_id attempt verified",
            [
                ("p1#0", "p1", 0, True),
                ("p2#0", "p2", 0, False),
                ("p2#1", "p2", 1, True),
                ("p3#0", "p3", 0, False),
                ("p4#0", "p4", 0, True),
            ],
        )
        insert(
            store,
            "trajectories",
            "trajectory_id source persona_id script_id verified stats n_turns n_errors n_corrections",
            [
                refine_row("p1", True, 9, {"parameter": 1, "location": 1}, 2),
                refine_row("p2", True, 7, {"parameter": 2}, 1),
                refine_row("p3", False),
                refine_row("p4", True),
            ],
        )
        insert(
            store,
            "verdicts",
            "trajectory_id attempt ok rule",
            [
                ("refine:p1", 0, False, "format"),
                ("refine:p1", 1, True, None),
                ("refine:p4", 0, False, "state"),
                ("refine:p4", 1, False, "state"),
            ],
        )
        insert(
            store,
            "coa_traces",
            "trace_id source status",
            [
                ("t1", "mas", "answered"),
                ("t2", "mas", "answered"),
                ("t3", "mas", "answered"),
                ("t4", "mas", "exhausted"),
                ("i1", "import:openai", "answered"),
                ("i2", "import:openai", "failed"),
            ],
        )
        insert(
            store,
            "trajectories",
            "trajectory_id trace_id task_id source verified rule correct stats n_turns",
            [
                coa_row("t1", "coa", correct=True, tools={"web_search": 2, "code": 1}, failures=1, replans=1),
                coa_row("t2", "coa", correct=False, tools={"web_search": 5}),
                coa_row("t3", "coa", rule="tag_order"),
                coa_row("t4", "coa", rule="exhausted"),
                coa_row("i1", "import", correct=True, tools={"code": 2}),
                ("i2", "i2", "task-i2", "import", False, "bad_log", None, "{not json", None),
            ],
        )  # malformed stats
        insert_curation(store)
        add_played_turns(store)
        insert(
            store,
            "llm_calls",
            CALL_KEYS + " started_at finished_at",
            [(*c, T0 + timedelta(seconds=i), T0 + timedelta(seconds=i + 1)) for i, c in enumerate(CALLS)],
        )


def add_played_turns(store: Store) -> None:
    """p1 and p2 as played in the garden script: p1's last action completes the task, p2's goal held a step early."""
    for persona, script_id, steps in (("p1", "p1#0", ROWS["completes"]), ("p2", "p2#0", ROWS["early"])):
        stored = [{"action": {"name": a, "params": p}, "evaluation": {"error": e}} for _, a, p, e in steps]
        turns = json.dumps([t.model_dump() for t in turns_of(steps)])
        store.execute(
            "UPDATE trajectories SET turns = ?, steps = ? WHERE trajectory_id = ?",
            [turns, json.dumps(stored), f"refine:{persona}"],
        )
        store.execute("UPDATE scripts SET script = ? WHERE script_id = ?", [json.dumps(GARDEN), script_id])


def insert_curation(store: Store) -> None:
    insert(
        store,
        "filter_configs",
        "filter position kind",
        [("min_turns", 0, "complexity"), ("correct", 1, "correctness"), ("split", 2, "split")],
    )
    insert(
        store,
        "filter_verdicts",
        "trajectory_id filter keep reason weight split",
        [
            ("refine:p1", "min_turns", True, None, 1, None),
            ("refine:p2", "min_turns", False, "too few turns: 7 < 8", 1, None),
            ("t1", "correct", True, None, 2, None),
            ("t2", "correct", False, "incorrect: wrong answer", 1, None),
            ("i1", "correct", True, None, 1, None),
            ("refine:p1", "split", True, None, 1, "sft"),
            ("t1", "split", True, None, 1, "rl"),
            ("i1", "split", True, None, 1, "sft"),
        ],
    )
    samples = {("A", "m1"): [1, 1, 1, 1], ("B", "m1"): [1, 0, 1, 0], ("C", "m1"): [0, 0, 0, 0], ("A", "m2"): [1, 0],
               ("B", "m2"): [None]}  # a failed request: unscored  # fmt: skip
    insert(store, "rollouts", "task_id model sample_index correct",
           [(task, model, i, ok if ok is None else bool(ok)) for (task, model), oks in samples.items()
            for i, ok in enumerate(oks)])  # fmt: skip


def parse(html: str) -> SimpleNamespace:
    """A page's section ids, chart names and, per `<table data-table=NAME>`, its body rows as cell texts."""
    tables = {name: [[unescape(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
                     for row in re.findall(r"<tr>(.*?)</tr>", inner) if "<td" in row]
              for name, inner in re.findall(r'<table data-table="([^"]+)">(.*?)</table>', html)}  # fmt: skip
    return SimpleNamespace(
        sections=re.findall(r'<section id="([^"]+)"', html),
        tables=tables,
        charts=re.findall(r'<svg [^>]*data-chart="([^"]+)"', html),
    )


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("report") / "run"
    build_sample_store(run_dir)
    path = write_report(run_dir)
    return run_dir, path, parse(path.read_text(encoding="utf-8"))


def test_report_has_every_section_and_no_external_resource(sample):
    run_dir, path, page = sample
    assert path == run_dir / "report.html"
    assert page.sections == list(SECTIONS)
    html = path.read_text(encoding="utf-8")
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    assert "<script" not in html and "<link" not in html
    assert {"funnel-refine", "funnel-coa", "funnel-import", "filter-drops", "drop-reasons", "turns", "tool-calls",
            "refine-errors", "corrections", "verifier-rules", "coa-failures", "tool-types", "pass-rate", "tokens",
            "cost", "latency", "error-kinds", "completion", "first-mistake", "mistakes-per-row",
            "error-mix"} <= set(page.charts)  # fmt: skip


def test_header_totals_and_funnels(sample):
    _, path, page = sample
    runs = page.tables["runs"]
    assert [r[:3] for r in runs] == [["r-refine", "refine", "done"], ["r-coa", "coa", "failed"]]
    assert runs[0][5] == "12m 05s"
    # coa turns: 2 per tool call + 3 (t1: 3 calls, t2: 5); refine: 9 + 7
    assert page.tables["sources"] == [
        ["coa", "4", "2", "1", "22"],
        ["import", "2", "1", "1", "7"],
        ["refine", "4", "2", "0", "16"],
    ]
    tokens = sum(c[5] + c[6] for c in CALLS)
    assert f"{tokens:,}" in path.read_text(encoding="utf-8")
    counts = {name: [row[1] for row in page.tables[f"funnel-{name}"]] for name in ("refine", "coa", "import")}
    assert counts == {"refine": ["4", "4", "3", "3", "2"], "coa": ["4", "3", "2", "1"], "import": ["2", "1", "1", "1"]}
    assert page.tables["funnel-coa"][3] == ["correct", "1", "25.0%"]


def test_filter_drops_by_filter_and_reason(sample):
    _, _, page = sample
    assert page.tables["filters"] == [
        ["min_turns", "complexity", "2", "1", "1", "1.00"],
        ["correct", "correctness", "3", "2", "1", "1.33"],
        ["split", "split", "3", "3", "0", "1.00"],
    ]
    # reasons grouped by category as `factory filter` prints them, with one full reason as example
    assert page.tables["drop-reasons"] == [
        ["correct", "incorrect", "1", "incorrect: wrong answer"],
        ["min_turns", "too few turns", "1", "too few turns: 7 < 8"],
    ]
    # The export's counts (export.selection.kept_counts): of 10 trajectories 5 are verified, filters drop p2 and t2;
    # p1, t1 (weight 2) and i1 are kept; the 5 unverified rows are never kept, whatever a filter said.
    assert page.tables["kept"] == [["10", "5", "2", "5", "3", "4.00"]]
    assert page.tables["splits"] == [["rl", "1", "1"], ["sft", "2", "2"]]


def test_shape_and_errors(sample):
    _, _, page = sample
    shape = {row[0]: row for row in page.tables["shape"]}
    assert shape["refine"][1:5] == ["2", "8.00", "8.00", "9"]
    assert shape["coa"][5:] == ["4.00", "4.00", "5"]  # t1 has 3 tool calls, t2 5
    assert page.tables["refine-error-types"] == [["parameter", "3"], ["location", "1"]]
    assert page.tables["refine-errors"] == [["2", "4", "3", "2"]]
    assert page.tables["verifier-rules"] == [["state", "2"], ["format", "1"]]
    assert page.tables["coa-failures"] == [
        ["coa", "exhausted", "1"],
        ["coa", "tag_order", "1"],
        ["import", "bad_log", "1"],
    ]
    assert page.tables["coa-tools"] == [["3", "10", "1", "1", "0"]]


def test_refine_quality(sample):
    _, _, page = sample
    assert page.tables["completion"] == [
        ["last action completes", "1", "50.0%"],
        ["goal held before the end", "1", "50.0%"],
        ["goal not reached", "0", "0.0%"],
        ["unknown (no goal)", "0", "0.0%"],
    ]
    assert page.tables["first-mistake"] == [["1", "1"], ["2", "1"]]  # p2 opens with its mistake, p1 at turn 2
    assert page.tables["mistakes-per-row"] == [["1", "2"]]
    assert page.tables["error-mix"] == [["parameter", "2", "100.0%"]]
    assert page.tables["thoughts"] == [["2", "2", "100.0%", "i think the next thing", "2", "100.0%"]]
    assert page.tables["diversity"] == [
        ["task 3-grams", "4", "8", "50.0%"],
        ["action names", "3", "6", "50.0%"],
        ["location names", "3", "6", "50.0%"],
    ]


def test_pass_rates_tokens_cost_latency_and_errors(sample):
    _, _, page = sample
    assert page.tables["pass-rate"] == [
        ["m1", "3", "12", "0", "50.0%", "1", "1"],
        ["m2", "1", "2", "1", "50.0%", "0", "0"],
    ]
    usage = {(row[0], row[1]): row for row in page.tables["usage"]}
    planner = usage[("coa.planner", "openai/gpt-4o-mini")]
    assert planner[2:] == ["4", "2", "50.0%", "820", "110", "$0.0025", "0"]
    assert usage[("script", "local")][7] == "unpriced"
    latency = {(row[0], row[1]): row for row in page.tables["latency"]}
    script_latencies = [c[8] for c in CALLS if c[1] == "script"]
    assert latency[("script", "local")][4] == f"{statistics.median(script_latencies):.2f} s"
    assert latency[("trajectory", "local")][7] == "30.00 s"
    assert page.tables["error-kinds"] == [
        ["rate_limit", "2", "22.2%", "coa.planner"],
        ["schema", "1", "11.1%", "script"],
        ["timeout", "1", "11.1%", "trajectory"],
    ]


def test_an_empty_store_says_so_in_every_section(tmp_path):
    Store.open(tmp_path / "run").close()
    page = parse(write_report(tmp_path / "run", tmp_path / "out" / "r.html").read_text(encoding="utf-8"))
    assert page.sections == list(SECTIONS)
    html = (tmp_path / "out" / "r.html").read_text(encoding="utf-8")
    for message in ("no runs recorded", "no refine, coa or imported trajectories yet", "no filter verdicts",
                    "no trajectories with turns yet", "no player mistakes or lost coa tasks", "nothing failed", "no rollouts",
                    "no LLM calls logged", "no latencies logged", "no verified refine trajectories",
                    "no evaluation yet"):  # fmt: skip
        assert message in html
    assert page.charts == []


def test_a_report_reads_the_store_without_writing_it(tmp_path):
    with Store.open(tmp_path) as store:
        store.execute(
            "INSERT INTO trajectories (trajectory_id, source, verified, n_turns) VALUES ('r:p', 'refine', 1, 5)"
        )
    before = (tmp_path / "factory.sqlite").read_bytes()
    page = parse(write_report(tmp_path).read_text(encoding="utf-8"))
    assert page.tables["sources"] == [["refine", "1", "1", "0", "5"]]
    assert "no rollouts" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert (tmp_path / "factory.sqlite").read_bytes() == before  # read, not written


def test_missing_store_and_command_line(tmp_path, capsys):
    with pytest.raises(FactoryError, match="no run store at"):
        write_report(tmp_path / "nowhere")
    Store.open(tmp_path / "run").close()
    parser = argparse.ArgumentParser()
    add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", str(tmp_path / "run"), "--out", str(tmp_path / "x.html")])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == f"report: {tmp_path / 'x.html'}"
    assert (tmp_path / "x.html").stat().st_size > 1000


def test_histograms_keep_empty_bins_and_edges(tmp_path):
    store = Store(tmp_path / "h.duckdb")
    bins = int_histogram(store, "SELECT unnest([1, 2, 2, 5]) AS x")
    assert [(b.label, b.count) for b in bins] == [("1", 1), ("2", 2), ("3", 0), ("4", 0), ("5", 1)]
    rates = float_histogram(store, "SELECT unnest([0.0, 0.3, 0.5, 1.0, 1.0]) AS x", bins=10, lo=0.0, hi=1.0)
    assert [b.count for b in rates] == [1, 0, 0, 1, 0, 1, 0, 0, 0, 2]
    assert int_histogram(store, "SELECT 1 AS x WHERE false") == []


# --- the page in a real browser ---------------------------------------------------------------------------------


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what chromium writes) to (width, bytes per pixel, rows)."""
    data, pos, idat, header = path.read_bytes(), 8, b"", None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        header = struct.unpack(">IIBBBBB", data[pos + 8 : pos + 21]) if kind == b"IHDR" else header
        idat += data[pos + 8 : pos + 8 + length] if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = header
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and depth == 8 and color_type in (2, 6) and interlace == 0, header
    bpp = 3 if color_type == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride) if kind else ():  # undo the scanline's filter: sub, up, average or Paeth
            a, b, c = (line[i - bpp], prev[i], prev[i - bpp]) if i >= bpp else (0, prev[i], 0)
            if kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                a = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + (a if kind in (1, 4) else b if kind == 2 else (a + b) // 2)) & 255
        rows.append(bytes(line))
        prev = line
    return width, bpp, rows


def chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    command = [shutil.which("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu",
               f"--user-data-dir={tmp / 'chromium-profile'}", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not on PATH: browser rendering not checked")
def test_report_renders_in_headless_chromium(sample, tmp_path):
    _, path, _ = sample
    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars", path.as_uri(), tmp=tmp_path)
    assert shot.is_file() and shot.stat().st_size > 20_000
    width, bpp, rows = png_pixels(shot)
    assert width == 1280 and len(rows) == 2400
    colours = {row[i : i + 3] for row in rows for i in range(0, len(row), bpp)}
    assert len(colours) > 50  # text, cards and charts, not a blank page
    assert bytes.fromhex(COLORS[0][1:]) in colours, "the charts' bar colour never appears on screen"
    dom = chromium("--dump-dom", path.as_uri(), tmp=tmp_path).stdout
    page = parse(dom)
    assert page.sections == list(SECTIONS)
    assert {"funnel-refine", "pass-rate", "latency", "tokens", "completion", "first-mistake"} <= set(page.charts)
    assert dom.count("<rect") > 40
