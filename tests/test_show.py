"""`factory show` prints what fits the row's path (issue 15: a coa row printed `turns None, errors None`)."""

import json

from test_export import make_run

from factory.cli import main
from factory.store import Store


def test_a_coa_row_shows_its_task_answer_check_and_tool_stats(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    stats = {"tool_calls": 3, "tool_calls_by_type": {"web_search": 2, "crawl_page": 1}, "tool_failures": 1,
             "plans": 2, "replans": 1, "reflections": 2, "double_checks": 1, "double_check_scores": [4]}  # fmt: skip
    with Store.open(run) as store:
        store.execute("UPDATE trajectories SET stats = ? WHERE trajectory_id = 'coa:t2'", [json.dumps(stats)])
    assert main(["show", str(run), "coa:t2"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out.splitlines()[0] and "persona" not in out.splitlines()[0]
    assert "task t2  answer 'Paris'  correct" in out
    assert "tool calls {'web_search': 2, 'crawl_page': 1} (1 failed), plans 2, re-plans 1, reflections 2" in out
    assert "turns None" not in out and "<web_search>" in out  # the AFM text itself follows


def test_a_refine_row_keeps_its_turns_mistakes_and_corrections(tmp_path, capsys):
    run = make_run(tmp_path / "run")
    assert main(["show", str(run), "refine:p1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("refine:p1  persona p1  verified")
