"""The report's sample trajectories: kept beside dropped, mistakes and masks marked as the export trains them,
AFM tags coloured, untrusted text escaped, long rows cut, the choice seeded."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import duckdb
import pytest
from test_export import KEPT, add_coa, add_refine, make_run, verdict

from factory.coa.afm import make_blocks, render_single
from factory.coa.store import save_failure, save_trace
from factory.coa.trace import Event, ToolCall, Trace
from factory.export import ExportOptions, export_dataset
from factory.records import Turn, TurnError
from factory.reporting import write_report
from factory.reporting.data_samples import PER_SIDE, samples
from factory.reporting.sections_samples import TAG_COLORS
from factory.reporting.sections_samples import samples as render_samples
from factory.store import Store, utcnow

PAYLOAD = "<script>document.documentElement.setAttribute('data-pwned', '1')</script>"
SAMPLE_LIMIT = 20_000  # bytes of HTML per sample, however long the trajectory


def articles(html: str) -> dict[str, str]:
    """Each sample's HTML by trajectory id (ids are escaped in the attribute)."""
    return {
        unescape(tid): body
        for tid, body in re.findall(r'<article class="sample" data-sample="([^"]+)">(.*?)</article>', html, re.S)
    }


def side(html: str, title: str) -> str:
    start = html.index(f"<h3>{title}</h3>")
    end = html.index("<h3>Dropped or failed</h3>") if title == "Kept" else html.index("</section>", start)
    return html[start:end]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("samples") / "run")


@pytest.fixture(scope="module")
def page(run) -> str:
    return write_report(run).read_text(encoding="utf-8")


def test_kept_left_dropped_right_with_reasons(page):
    kept, dropped = articles(side(page, "Kept")), articles(side(page, "Dropped or failed"))
    assert len(kept) == PER_SIDE and set(kept) <= KEPT
    assert {tid.split(":")[0] for tid in kept} == {"refine", "coa", "import"}  # one of each source first
    # make_run has 4 rows the export leaves out: 2 unverified, 2 dropped by a filter; 3 are shown
    assert len(dropped) == PER_SIDE and set(dropped) <= {"refine:p7", "coa:t7", "refine:p8", "coa:t8"}
    reasons = {
        tid: unescape(re.search(r'<div class="why">(.*?)</div>', body).group(1)) for tid, body in dropped.items()
    }
    expected = {
        "refine:p7": "not verified: rule failed",
        "coa:t7": "not verified: grammar tag_in_text",
        "refine:p8": "dropped by complexity: fewer than 2 corrections",
        "coa:t8": "dropped by dedup: duplicate of coa:t2",
    }
    assert reasons == {tid: expected[tid] for tid in reasons}
    assert len({reason.split(":")[0] for reason in reasons.values()}) >= 2  # different kinds of reason first
    assert not any('class="why"' in body for body in kept.values())


def test_the_choice_is_seeded(run):
    with Store.open(run, read_only=True) as store:
        first = samples(store, ExportOptions(), seed="a")
        again = samples(store, ExportOptions(), seed="a")
        others = [samples(store, ExportOptions(), seed=str(n)) for n in range(8)]
    ids = lambda found: [s.trajectory_id for s in found["kept"] + found["dropped"]]  # noqa: E731
    assert ids(first) == ids(again)
    assert len({tuple(ids(found)) for found in others}) > 1


def test_refine_turns_are_marked_as_the_exported_weights_say(run, tmp_path):
    with Store.open(run, read_only=True) as store:
        shown = samples(store, ExportOptions(), per_side=len(KEPT))
    export_dataset(run, tmp_path / "out", ExportOptions(formats=["messages"]))
    exported = {}
    for path in (tmp_path / "out" / "messages").glob("*.parquet"):
        for tid, messages in duckdb.connect().execute(f"SELECT id, to_json(messages) FROM '{path}'").fetchall():
            exported[tid] = json.loads(messages)
    refine = [s for s in shown["kept"] if s.source == "refine"]
    assert refine, "some kept refine rows are shown"
    for sample in refine:
        weights = [m["weight"] == 1 for m in exported[sample.trajectory_id] if m["role"] == "assistant"]
        assert [t.trains for t in sample.turns if t.role == "assistant"] == weights
        [mistake] = [t for t in sample.turns if t.error]
        assert (mistake.error, mistake.feedback, mistake.trains) == ("parameter", "There is no brass key here.", False)


def test_mistakes_and_masks_are_visible_in_the_html(page):
    body = next(body for tid, body in articles(page).items() if tid.startswith("refine:") and "mistake" in body)
    assert 'class="turn mistake"' in body and "✗ parameter error · not trained" in body
    assert "DM feedback: There is no brass key here." in body
    assert 'class="turn trained"' in body


def test_afm_tags_coloured_and_observations_not_trained(run):
    with Store.open(run, read_only=True) as store:
        shown = samples(store, ExportOptions(), per_side=len(KEPT))
    afm = [s for s in shown["kept"] if s.segments]
    assert afm, "some kept coa rows are shown as AFM text"
    for sample in afm:
        untrained = "".join(seg.text for seg in sample.segments if not seg.trains)
        assert untrained == "<observation>\nParis is the capital of France.\n</observation>\n\n"  # AFM's span
        assert {seg.tag for seg in sample.segments} >= {"think", "plan", "web_search", "observation", "answer"}
    html = render_samples({"kept": afm, "dropped": [], "seed": "x"})
    assert '<span class="tag-observation nt" title="not trained">&lt;observation&gt;' in html
    assert '<span class="tag-answer">&lt;answer&gt;' in html
    assert all(f".tag-{tag}" in html for tag in TAG_COLORS)


def hostile_run(run_dir: Path) -> Path:
    """One refine row and one coa row whose text is a script and is very long, plus a damaged row."""
    with Store.open(run_dir) as store:
        add_refine(store, 1)
        turns = json.loads(store.query("SELECT turns FROM trajectories WHERE trajectory_id = 'refine:p1'")[0][0])
        long = [
            Turn(role="user", content=PAYLOAD + "x" * 20_000).model_dump(),
            Turn(
                role="assistant", content=PAYLOAD, loss=False, error=TurnError(type="parameter", feedback=PAYLOAD)
            ).model_dump(),
        ] * 30
        store.execute("UPDATE trajectories SET turns = ? WHERE trajectory_id = 'refine:p1'", [json.dumps(turns + long)])
        blocks = make_blocks(
            [
                ("think", PAYLOAD),
                ("plan", "p"),
                ("think", "t"),
                ("web_search", "q"),
                ("observation", PAYLOAD + "y" * 200_000),
                ("think", "t"),
                ("answer", PAYLOAD),
            ]
        )
        single = render_single("Answer " + PAYLOAD, blocks)
        add_coa(store, "coa:evil", "evil")
        store.execute(
            "UPDATE trajectories SET prompt = ?, completion = ?, observation_spans = ? "
            "WHERE trajectory_id = 'coa:evil'",
            [single.prompt, single.completion, json.dumps([list(s) for s in single.observation_spans])],
        )
        store.upsert(
            "trajectories",
            {
                "trajectory_id": "refine:broken",
                "source": "refine",
                "verified": False,
                "reason": PAYLOAD,
                "turns": "{not json",
                "created_at": utcnow(),
            },
        )
        verdict(store, "coa:evil", "complexity", True)
    return run_dir


def test_untrusted_text_is_escaped_and_long_rows_are_cut(tmp_path):
    html = write_report(hostile_run(tmp_path / "run")).read_text(encoding="utf-8")
    assert "<script" not in html and "&lt;script&gt;" in html
    shown = articles(html)
    assert set(shown) == {"refine:p1", "coa:evil", "refine:broken"}
    for tid, body in shown.items():
        assert len(f"<article>{body}</article>".encode()) <= SAMPLE_LIMIT, tid
    assert re.search(r"… 5\d turns not shown …", shown["refine:p1"])
    assert re.search(r"… [\d,]+ more characters not shown", shown["refine:p1"])
    assert re.search(r"… [\d,]+ more characters not shown", shown["coa:evil"])
    assert "cannot show this row" in shown["refine:broken"] and "not verified: &lt;script&gt;" in shown["refine:broken"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not on PATH: browser rendering not checked")
def test_the_page_renders_and_runs_no_trajectory_script(tmp_path):
    path = write_report(hostile_run(tmp_path / "run"))
    command = [shutil.which("chromium"), "--headless=new", "--no-sandbox", "--disable-gpu",
               f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", path.as_uri()]  # fmt: skip
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    assert '<section id="samples"' in dom and len(articles(dom)) == 3
    assert "data-pwned" not in dom.split("<body")[0]  # the payload stayed text: no attribute was set
    assert 'class="turn mistake"' in dom and 'class="tag-observation nt"' in dom


def test_a_failed_refine_row_shows_its_played_steps(tmp_path):
    """A row that failed verification keeps no turns, only the steps it played (as refine stores them)."""
    steps = [{"thought": "go out", "action": {"name": "go", "params": {"place": "garden"}},
              "observation": "There is no garden here.", "evaluation": {"error": "location", "task_done": False}},
             {"thought": "look", "action": {"name": "look", "params": {}}, "observation": "A hall.",
              "evaluation": {"error": None, "task_done": False}}] * 10  # fmt: skip
    with Store.open(tmp_path / "run") as store:
        store.upsert("trajectories", {"trajectory_id": "refine:p1", "source": "refine", "verified": False,
                                      "reason": "not_done: the trajectory ends before the task is done",
                                      "steps": json.dumps(steps), "created_at": utcnow()})  # fmt: skip
    [body] = articles(write_report(tmp_path / "run").read_text(encoding="utf-8")).values()
    assert "not verified: not_done: the trajectory ends before the task is done" in body
    assert "✗ location error · played, not exported" in body and "DM feedback: There is no garden here." in body
    assert "Action: go(place=garden)" in body and "assistant · played, not exported" in body
    assert "… 28 turns not shown …" in body  # 20 steps: the first 4 and the last 2 are shown
    assert 'class="turn trained"' not in body


def test_a_failed_coa_task_shows_its_trace(tmp_path):
    """A task whose run stopped (no distilled text) shows its question and the trace's events, escaped."""
    events = [Event(agent="planner", kind="plan", think="Plan it.", content="1. search"),
              Event(agent="search_agent", kind="tool_call", think="Search.",
                    tool=ToolCall(name="web_search", argument="capital", ok=False, result=PAYLOAD)),
              Event(agent="planner", kind="error", content="token budget spent")]  # fmt: skip
    trace = Trace(trace_id="coa:q1", task_id="q1", variant="mas", question="What is the capital?", events=events,
                  status="token_budget")  # fmt: skip
    with Store.open(tmp_path / "run") as store:
        save_trace(store, trace)
        save_failure(store, trace, "token_budget", "the run spent its token budget")
    html = write_report(tmp_path / "run").read_text(encoding="utf-8")
    [body] = articles(html).values()
    assert "<script" not in html and "not verified: the run spent its token budget" in body
    assert "question · not exported" in body and "What is the capital?" in body
    assert "planner · plan · not exported" in body and "think: Plan it.\n1. search" in body
    assert "search_agent · tool call · ✗ tool error · not exported" in body
    assert "web_search: capital\n→ &lt;script" in body
    assert "planner · error · ✗ run error · not exported" in body and 'class="turn trained"' not in body
