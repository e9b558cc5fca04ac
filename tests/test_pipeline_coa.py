"""`factory run` on the Chain-of-Agents path: scripted loopback replies, the real sandbox, the shipped filters."""

import yaml
from test_coa_mas import ANSWERER, CODE, PLANNER, REFLECTOR, VERIFIER, answer, check, code, plan, reflect, write_tasks
from test_pipeline import REPO, run


def write_pipeline(tmp_path, server, filters, **stages):
    tasks = write_tasks(tmp_path / "math.jsonl", *[  # one scripted solution answers both
        {"id": i, "question": question, "answer": "42", "domain": "math", "data_source": "t"}
        for i, question in enumerate(("What is 6 * 7?", "What is 7 * 6?"))])  # fmt: skip
    config = {
        "run_dir": str(tmp_path / "run"),
        "llm": {"model": "m", "base_url": server.base_url, "max_retries": 0},
        "coa": {"tasks": tasks, "count": 2, "parallel_tasks": 1},
        "pipeline": {"generate": ["coa"], "filter": str(filters), "export": {"formats": ["afm", "messages"]},
                     "report": True, **stages},
    }  # fmt: skip
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def route_solutions(server, tasks=2):
    for marker, reply in ((PLANNER, plan("Multiply.")), (CODE, code("print(6 * 7)")), (REFLECTOR, reflect()),
                          (ANSWERER, answer("42")), (VERIFIER, check(4))):  # fmt: skip
        server.route(marker, *[reply] * tasks)  # each reply is taken once


def test_the_shipped_filters_stop_short_coa_runs_at_export_and_say_which_filter(server, tmp_path, capsys):
    route_solutions(server)
    config = write_pipeline(tmp_path, server, REPO / "examples" / "filters.yaml")
    code_, out, err = run(config, capsys)
    assert "funnel: tasks 2 -> answered 2 -> distilled 2 -> correct 2" in out
    assert code_ == 2 and err.count("\n") == 1
    assert "the filters dropped all 2 verified trajectories (enough_tool_calls: " in err  # AFM's >= 5 tool calls
    assert "factory ls " in err and "--dropped" in err


def test_a_coa_pipeline_trains_on_the_afm_export(server, tmp_path, capsys):
    route_solutions(server)
    filters = tmp_path / "filters.yaml"
    filters.write_text("filters: [{name: correct, kind: correctness, require: [verified, correct]}]\n")
    train = {
        "config": str(REPO / "examples" / "train_tiny.yaml"),
        "format": "afm",
        "overrides": {"optim.max_steps": 1, "save_steps": 0, "data.validation_fraction": 0.0},
    }
    config = write_pipeline(tmp_path, server, filters, export={"formats": ["afm"], "validation": 0.0}, train=train)
    code_, out, _ = run(config, capsys)
    assert code_ == 0, out
    assert "afm: train 2 -> " in out and "trained: " in out
    assert (tmp_path / "run" / "report.html").is_file()
