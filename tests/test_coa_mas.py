"""The multi-agent system over real HTTP (scripted loopback replies), the real sandbox and a real corpus."""

import json
import re
from pathlib import Path

from loopback_server import ok
from pydantic import BaseModel

from factory.coa import CoaConfig, load_trace, run_coa
from factory.coa.afm import validate_afm
from factory.coa.tools import LocalCorpusConfig, SearchToolConfig, ToolsConfig
from factory.llm import LLMConfig
from factory.store import Store

# Each role's system prompt opens with its step; the loopback server routes on these.
PLANNER, SEARCH, CODE = "Your step now: PLAN.", "Your step now: ONE TOOL CALL.", "Your step now: RUN CODE."
REFLECTOR, ANSWERER, VERIFIER = (
    "Your step now: REFLECT.",
    "Your step now: SUGGEST AN ANSWER.",
    "Your step now: DOUBLE-CHECK.",
)
SUMMARY = "Summarise a web page for a reader"  # crawl_page's summary prompt
CORPUS = [
    {"id": "venom", "title": "Platypus venom", "text": "Only the male platypus has a venomous spur on its hind leg."},
    {"id": "seine", "title": "Paris", "text": "Paris, the capital of France, lies on the river Seine."},
    {"id": "loire", "title": "Loire", "text": "The Loire is the longest river in France; it does not cross Paris."},
]


class Config(BaseModel):  # the FactoryConfig the lead wires: run_dir, llm, coa
    run_dir: Path
    llm: LLMConfig
    coa: CoaConfig


def plan(*steps):
    return ok({"think": "Break the question down.", "steps": list(steps) or ["Find the fact."]})


def code(source):
    return ok({"think": "Compute it exactly.", "code": source})


def search(argument, tool="web_search"):
    return ok({"think": "Look it up.", "tool": tool, "argument": argument})


def reflect(step="done", poor=None):
    """A reflection on the call for the current plan step: done, retry, drop or replan (poor: replan)."""
    ratings = {
        name: "poor" if name == poor else "good"
        for name in ("consistency", "tool_effectiveness", "trajectory_progress")
    }
    step = "replan" if poor else step
    return ok({"think": "Judge the last result.", "comment": "The result is clear.", "step": step, **ratings})


def answer(text, evidence=None):
    evidence = evidence if evidence is not None else [{"claim": f"The result shows {text}.", "call": 1}]
    return ok({"think": "The work shows it.", "answer": text, "evidence": evidence})


def check(score, more=""):
    comment = "Checked against the results."
    return ok({"think": "Compare with the evidence.", "comment": comment, "score": score, "check": more})


def summary(text):
    return ok({"summary": text})


def write_tasks(path, *tasks):
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return str(path)


def make_config(tmp_path, fast_config, tasks, **coa):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in CORPUS))
    local = LocalCorpusConfig(path=corpus, index_dir=tmp_path / "index")
    tools = ToolsConfig(web_search=SearchToolConfig(enabled=True, backend="local", local=local))
    settings = CoaConfig(tasks=tasks, tools=tools, parallel_tasks=1, **coa)
    return Config(run_dir=tmp_path / "run", llm=fast_config(max_parse_retries=0), coa=settings)


def rows(config):
    with Store.open(config.run_dir) as store:
        columns = [d[0] for d in store.query("DESCRIBE trajectories")]
        return [dict(zip(columns, row)) for row in store.query("SELECT * FROM trajectories ORDER BY trajectory_id")]


def trace_of(config, trace_id):
    with Store.open(config.run_dir) as store:
        return load_trace(store, trace_id)


def qa_task(tmp_path, question="Which river flows through Paris?", answers=("Seine",)):
    return write_tasks(
        tmp_path / "qa.jsonl",
        {"id": "q1", "question": question, "answer": list(answers), "domain": "qa", "data_source": "t"},
    )


def test_a_math_task_solved_with_the_code_tool_distils_and_checks_correct(server, fast_config, tmp_path):
    tasks = write_tasks(
        tmp_path / "math.jsonl",
        {"id": 1, "question": "What is 2^10 + 3?", "answer": "1027", "domain": "math", "data_source": "t"},
    )
    server.route(PLANNER, plan("Compute 2^10.", "Add 3."))
    server.route(CODE, code("print(2**10)"), code("print(2**10 + 3)"))  # one run per plan step
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("1027", [{"claim": "2^10 + 3 printed 1027", "call": 2}]))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, tasks)
    outcome = run_coa(config, progress=False)

    assert outcome.funnel == {"tasks": 1, "answered": 1, "distilled": 1, "correct": 1} and outcome.failures == {}
    (row,) = rows(config)
    assert row["verified"] and row["correct"] and row["variant"] == "code" and row["final_answer"] == "\\boxed{1027}"
    assert validate_afm(row["completion"], "code", "boxed").ok
    ran = "[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n1027\n[STDOUT:END]"  # the sandbox really ran it
    assert f"\n<observation>\n{ran}\n</observation>\n\n" in row["completion"]  # in AFM's words and layout
    turns = json.loads(row["turns"])
    assert [t["loss"] for t in turns if t["kind"] == "observation"] == [False, False]
    assert "".join(t["content"] for t in turns[1:]) == row["completion"]
    start, end = json.loads(row["observation_spans"])[-1]
    assert row["completion"][start:end].strip() == f"<observation>\n{ran}\n</observation>"
    stats = json.loads(row["stats"])
    assert stats["tool_calls_by_type"] == {"code": 2} and stats["replans"] == 0 and stats["double_checks"] == 1
    assert (stats["plan_steps"], stats["steps_done"], stats["steps_skipped"]) == (2, 2, 0)
    assert (stats["claims"], stats["grounded_claims"], stats["answer_before_tool"]) == (2, 2, False)

    sent = len(server.requests)
    again = run_coa(config, progress=False)  # resumable: the finished task sends nothing
    assert len(server.requests) == sent and again.funnel == outcome.funnel


def test_a_poor_reflection_forces_a_replan(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Search the city."), plan("Search the river by name."))
    server.route(SEARCH, search("capital of France"), search("Paris Seine river"))
    server.route(REFLECTOR, reflect(poor="tool_effectiveness"), reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    assert run_coa(config, progress=False).funnel["correct"] == 1

    trace = trace_of(config, "coa:t/q1")
    assert [e.kind for e in trace.events] == ["plan", "tool_call", "reflection", "plan", "tool_call", "reflection",
                                              "suggested_answer", "double_check", "answer"]  # fmt: skip
    assert trace.events[3].replan and trace.events[2].decision == "replan"
    assert "corpus://seine" in trace.events[4].tool.result  # BM25 over the real local corpus
    (row,) = rows(config)
    assert validate_afm(row["completion"], "mas").ok
    assert re.search(r"tool_effectiveness: poor\s+trajectory_progress: good\s*</reflection>", row["completion"])
    assert json.loads(row["stats"])["replans"] == 1


def test_a_low_double_check_forces_a_replan_and_counts_as_corrected(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Find the river."), plan("Read the Paris page."))
    server.route(SEARCH, search("longest river France"), search("corpus://seine", tool="crawl_page"))
    server.route(SUMMARY, summary("- Paris lies on the river Seine."))
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("Loire"), answer("Seine", [{"claim": "Paris lies on the river Seine.", "call": 2}]))
    server.route(VERIFIER, check(2), check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    run_coa(config, progress=False)

    (row,) = rows(config)
    stats = json.loads(row["stats"])
    assert row["verified"] and row["correct"] and stats["double_check_scores"] == [2, 4]
    assert stats["low_double_check_corrected"] and stats["replans"] == 1
    assert stats["tool_calls_by_type"] == {"web_search": 1, "crawl_page": 1}
    assert re.search(r"score: 2\s*</double_check>\s*<think>", row["completion"])
    assert validate_afm(row["completion"], "mas").ok
    # AFM's crawl_page observation: the page summarised by an LLM call that the trace counts.
    assert "Page 1 [corpus://seine] Summary:\n- Paris lies on the river Seine." in row["completion"]
    crawl = trace_of(config, row["trace_id"]).tool_calls()[1]
    assert crawl.ok and len(crawl.llm) == 1 and stats["llm_calls"] == 11  # 10 role calls + 1 summary


def test_a_tool_failure_is_an_observation_and_the_run_goes_on(server, fast_config, tmp_path):
    tasks = write_tasks(
        tmp_path / "math.jsonl", {"id": 2, "question": "What is 7 * 6?", "answer": "42", "domain": "math"}
    )
    server.route(PLANNER, plan("Multiply."))
    server.route(CODE, code("print(7 * 6 / 0)"), code("print(7 * 6)"))
    server.route(REFLECTOR, reflect("retry"), reflect())
    server.route(ANSWERER, answer("42", [{"claim": "7 * 6 printed 42", "call": 2}]))
    server.route(VERIFIER, check(3))
    config = make_config(tmp_path, fast_config, tasks)
    run_coa(config, progress=False)

    (row,) = rows(config)
    assert row["verified"] and row["correct"] and row["n_errors"] == 1
    assert "ZeroDivisionError" in row["completion"] and validate_afm(row["completion"], "code").ok
    first_call = trace_of(config, row["trace_id"]).events[1].tool
    assert not first_call.ok and first_call.meta["status"] == "error" and first_call.duration_s > 0


def test_garbage_from_the_llm_is_a_recorded_failure(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Search."))
    server.route(SEARCH, search("Paris river"))
    server.route(REFLECTOR, *[ok("this is not json")] * 10)
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    outcome = run_coa(config, progress=False)

    assert outcome.failures == {"llm_error": 1} and outcome.funnel["distilled"] == 0
    (row,) = rows(config)
    assert not row["verified"] and row["reason"].startswith("reflector: schema")
    trace = trace_of(config, row["trace_id"])
    assert (
        trace.status == "llm_error" and trace.events[-1].kind == "error" and trace.events[-1].llm.error_kind == "schema"
    )


def test_the_replan_budget_ends_a_run_as_exhausted(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Search."))
    server.route(SEARCH, search("zyzzyva"))
    server.route(REFLECTOR, reflect(poor="trajectory_progress"))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path), max_replans=0)
    assert run_coa(config, progress=False).failures == {"exhausted": 1}
    assert "re-plan budget (0) is spent" in rows(config)[0]["reason"]


def test_factory_coa_from_the_command_line(server, tmp_path):
    import subprocess
    import sys

    tasks = write_tasks(
        tmp_path / "math.jsonl",
        {"id": 1, "question": "What is 6 * 7?", "answer": "42", "domain": "math", "data_source": "t"},
    )
    server.route(PLANNER, plan("Multiply."))
    server.route(CODE, code("print(6 * 7)"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("42"))
    server.route(VERIFIER, check(4))
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "factory.cli", "coa", "-q", "--tasks", tasks, "--model", "m",
            "--base-url", server.base_url, str(run_dir)]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "funnel: tasks 1 -> answered 1 -> distilled 1 -> correct 1" in done.stdout

    missing = subprocess.run(args[:5] + args[7:], capture_output=True, text=True, timeout=60)  # no --tasks
    assert missing.returncode == 2 and missing.stderr.strip().startswith("error: coa.tasks is not set")


def test_the_mas_tool_agent_may_run_code_and_the_distillation_keeps_it(server, fast_config, tmp_path):
    tasks = qa_task(tmp_path, question="How many letters are in the river that crosses Paris?", answers=("5",))
    server.route(PLANNER, plan("Find the river.", "Count its letters."))
    server.route(SEARCH, search("river Paris"), search("print(len('Seine'))", tool="code"))
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("5"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, tasks, mas_code=True)
    run_coa(config, progress=False)

    (row,) = rows(config)
    assert row["verified"] and row["variant"] == "mas" and row["correct"]
    assert validate_afm(row["completion"], "mas").ok
    ran = "<observation>\n[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n5\n[STDOUT:END]\n</observation>"
    assert "<code>" in row["completion"] and ran in row["completion"]
    search_requests = [r["body"] for r in server.requests if SEARCH in json.dumps(r["body"]["messages"])]
    schema = json.dumps(search_requests[0]["response_format"])
    assert '"code"' in schema and "prints what it finds" in search_requests[0]["messages"][0]["content"]


def test_reply_limits_reach_the_wire_schema_and_a_web_run_offers_no_code_by_default(server, fast_config, tmp_path):
    limits = {"think": 120, "code": 400, "answer": 50, "comment": 90}
    server.route(PLANNER, plan("Search the river."))
    server.route(SEARCH, search("Paris river"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path), reply_chars=limits)
    run_coa(config, progress=False)

    bodies = {r["body"]["messages"][0]["content"][:22]: r["body"] for r in server.requests}
    search_body = next(b for key, b in bodies.items() if key.startswith(SEARCH[:22]))
    properties = search_body["response_format"]["json_schema"]["schema"]["properties"]
    assert properties["think"]["maxLength"] == 120 and properties["argument"]["maxLength"] == 300
    assert properties["tool"]["enum"] == ["web_search", "crawl_page"]  # no code: mas_code is off by default
    planner_prompt = next(b for key, b in bodies.items() if key.startswith(PLANNER[:22]))["messages"][0]["content"]
    assert [line[2:].split(":")[0] for line in planner_prompt.splitlines() if line.startswith("- ")] == [
        "web_search",
        "crawl_page",
    ]
    answer_body = next(b for key, b in bodies.items() if key.startswith(ANSWERER[:22]))
    assert answer_body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["maxLength"] == 50
