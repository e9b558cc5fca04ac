"""The web variant distils into one agent that saw exactly what it shows: prompts name exactly the tools
and modules a run offers, no role speaks of a team, and the observation the agents read is the one stored.

Runs go over real HTTP (scripted loopback replies), the real sandbox and a real BM25 corpus.
"""

import json
import re

import pytest
from loopback_server import ok
from test_coa_mas import (
    ANSWERER,
    CODE,
    CORPUS,
    PLANNER,
    REFLECTOR,
    SEARCH,
    SUMMARY,
    VERIFIER,
    Config,
    answer,
    check,
    code,
    plan,
    qa_task,
    reflect,
    rows,
    search,
    summary,
    trace_of,
    write_tasks,
)  # fmt: skip

from factory.coa import CoaConfig, run_coa
from factory.coa.config import ReplyLimits
from factory.coa.mas.voice import TEAM_TALK, team_talk
from factory.coa.roles import ROLE_TYPES
from factory.coa.tools import CodeTool, CodeToolConfig, ToolBox, ToolsConfig
from factory.coa.trace import Event, ToolCall, Trace
from factory.errors import FactoryError
from factory.prompts import load_prompt

WEB = ("web_search", "crawl_page")
LONG_PAGE = {"id": "long", "title": "Seine", "text": "The Seine flows through Paris. " + "filler " * 800 + "TAIL-MARK"}


def make_config(tmp_path, fast_config, tasks, tools=None, **coa):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in [*CORPUS, LONG_PAGE]))
    local = {"path": str(corpus), "index_dir": str(tmp_path / "index")}
    tools = ToolsConfig.model_validate({"web_search": {"enabled": True, "local": local}, **(tools or {})})
    settings = CoaConfig(tasks=tasks, tools=tools, parallel_tasks=1, **coa)
    return Config(run_dir=tmp_path / "run", llm=fast_config(max_parse_retries=0), coa=settings)


def system_prompts(server, marker) -> list[str]:
    return [
        r["body"]["messages"][0]["content"]
        for r in server.requests
        if r["body"]["messages"][0]["content"].startswith(marker)
    ]


def listed_tools(prompt: str) -> list[str]:
    lines = [line for line in prompt.splitlines() if line.startswith("- ") and ": the argument" in line]
    return [line[2:].split(":")[0] for line in lines]


def listed_modules(prompt: str) -> list[str]:
    return re.search(r"may import only these modules: (.*?)[.;] ", prompt).group(1).split(", ")


def math_task(tmp_path):
    return write_tasks(
        tmp_path / "math.jsonl",
        {"id": 1, "question": "What is 2^10 + 3?", "answer": "1027", "domain": "math", "data_source": "t"},
    )


def script_web_run(server, think="I will look the river up."):
    server.route(PLANNER, ok({"think": think, "steps": ["Find the river of Paris."]}))
    server.route(SEARCH, search("Paris river"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))


# --- prompts list exactly what is enabled -------------------------------------------------------


def test_a_code_run_names_no_web_tool_and_its_module_list_is_the_sandbox_allowlist(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Compute 2^10 + 3."))
    server.route(CODE, code("print(2**10 + 3)"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("1027"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, math_task(tmp_path))
    assert run_coa(config, progress=False).funnel["distilled"] == 1

    (planner,) = system_prompts(server, PLANNER)
    assert listed_tools(planner) == ["code"] and not re.search(r"search|crawl|page|web|url", planner, re.I)
    (coder,) = system_prompts(server, CODE)
    allowlist = CodeTool(CodeToolConfig()).limits.allowed_imports  # what the sandbox really lets through
    assert listed_modules(coder) == list(allowlist) == listed_modules(planner)


def test_the_module_list_follows_the_code_tools_allowlist_when_it_changes():
    toolbox = ToolBox.from_config(ToolsConfig.model_validate({"code": {"allowed_imports": ["math", "heapq", "sys"]}}))
    coder = ROLE_TYPES["code_agent"](ReplyLimits(), ("code",), toolbox.allowed_modules())
    allowlist = list(toolbox["code"].limits.allowed_imports)
    assert listed_modules(coder.system_prompt()) == ["math", "heapq", "sys"] == allowlist
    no_code = ToolBox.from_config(ToolsConfig.model_validate({"code": {"enabled": False}}))
    assert no_code.allowed_modules() == ()


def test_a_web_run_offers_and_names_only_the_web_tools_unless_code_is_asked_for(server, fast_config, tmp_path):
    script_web_run(server)
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    assert run_coa(config, progress=False).funnel["distilled"] == 1
    for marker in (PLANNER, SEARCH):
        (prompt,) = system_prompts(server, marker)
        assert listed_tools(prompt) == list(WEB) and "code" not in prompt.lower() and "python" not in prompt.lower()
    (searcher,) = [r["body"] for r in server.requests if r["body"]["messages"][0]["content"].startswith(SEARCH)]
    schema = searcher["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tool"]["enum"] == list(WEB) and not re.search(r"code|program", json.dumps(schema))

    server.requests.clear()
    script_web_run(server)
    (tmp_path / "asked").mkdir()
    asked = make_config(tmp_path / "asked", fast_config, qa_task(tmp_path), mas_code=True)
    run_coa(asked, progress=False)
    assert listed_tools(system_prompts(server, PLANNER)[0]) == [*WEB, "code"]


def test_a_run_with_no_tool_for_its_variant_stops_with_one_line(fast_config, tmp_path):
    config = make_config(tmp_path, fast_config, math_task(tmp_path), tools={"code": {"enabled": False}})
    with pytest.raises(FactoryError, match="^coa: the code variant has no tool to call: turn on tools.code$"):
        run_coa(config, progress=False)


def test_a_code_run_where_the_sandbox_cannot_hold_stops_before_any_llm_call(fast_config, tmp_path, monkeypatch, server):
    from factory.sandbox import api

    monkeypatch.setattr(api, "landlock_abi", lambda: 0)  # a kernel without Landlock, as the sandbox probes it
    monkeypatch.delenv("FACTORY_SANDBOX_UNCONTAINED", raising=False)
    config = make_config(tmp_path, fast_config, math_task(tmp_path))
    with pytest.raises(FactoryError, match="^coa: the code tool cannot run here: .*Landlock"):
        run_coa(config, progress=False)
    assert not server.requests


# --- one agent's voice ------------------------------------------------------------------------------


def test_no_role_prompt_speaks_of_a_team_or_other_agents():
    toolbox = ToolBox.from_config()
    for tools in [("code",), WEB, (*WEB, "code")]:
        for role in ROLE_TYPES.values():
            prompt = role(ReplyLimits(), tools, toolbox.allowed_modules()).system_prompt()
            assert not TEAM_TALK.search(prompt), (role.name, TEAM_TALK.search(prompt))
    for name in ("context", "crawl_summary"):
        assert not TEAM_TALK.search(load_prompt(f"coa/{name}"))


def test_team_talk_in_a_think_is_a_recorded_failure_with_its_rule(server, fast_config, tmp_path):
    script_web_run(server, think="The team should confirm the river with a search.")
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    outcome = run_coa(config, progress=False)

    assert outcome.failures == {"team_talk": 1} and outcome.funnel["distilled"] == 0
    (row,) = rows(config)
    assert not row["verified"] and row["rule"] == "team_talk"
    said = "The team should confirm the river with a search."
    assert row["reason"] == f"voice team_talk: the planner's think says '{said}'"


def test_team_words_the_question_itself_uses_are_not_team_talk(server, fast_config, tmp_path):
    script_web_run(server, think="Of the teams that play in Paris, I need the one with a stadium on a river.")
    tasks = qa_task(tmp_path, question="Which river flows past the stadium of the Paris team?")
    assert run_coa(make_config(tmp_path, fast_config, tasks), progress=False).funnel["distilled"] == 1


def test_team_talk_is_found_in_every_kind_of_agent_text():
    def trace(**event):
        return Trace(trace_id="t", variant="mas", question="q?", events=[Event(agent="reflector", **event)])

    assert team_talk(trace(kind="reflection", think="ok", content="My teammates found it.")).startswith(
        "the reflector's text says 'My teammates"
    )
    assert team_talk(trace(kind="double_check", think="The verifier agrees.")) is not None
    call = ToolCall(name="web_search", argument="search agent", ok=True, result="")
    assert team_talk(trace(kind="tool_call", think="I search.", tool=call)) is None  # a query is not its voice
    assert team_talk(trace(kind="plan", think="I will plan.", content="1. Search.")) is None
    assert team_talk(trace(kind="reflection", think="I wrote a verifier function.", content="It works.")) is None


# --- the observation the agents read is the one the trajectory shows -------------------------------


def test_agents_read_exactly_the_observation_the_distillation_shows(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Read the Seine page."))
    server.route(SEARCH, search("corpus://long", tool="crawl_page"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    tools = {"observation_chars": 1000, "crawl_page": {"summarize": False}}
    config = make_config(tmp_path, fast_config, qa_task(tmp_path), tools=tools)
    run_coa(config, progress=False)

    (row,) = rows(config)
    observation = trace_of(config, row["trace_id"]).tool_calls()[0].result
    assert observation.startswith("Title: Seine\nURL: corpus://long\n\nThe Seine flows through Paris.")
    assert re.search(r"\n\[\.\.\. truncated: \d+ more characters\]$", observation) and "TAIL-MARK" not in observation
    ((start, end),) = json.loads(row["observation_spans"])
    assert observation in row["completion"][start:end]  # the trajectory shows that text...
    for marker in (REFLECTOR, ANSWERER, VERIFIER):  # ... and every later role read that same text, whole
        (body,) = [r["body"] for r in server.requests if r["body"]["messages"][0]["content"].startswith(marker)]
        user = body["messages"][1]["content"]
        assert observation in user and "TAIL-MARK" not in user


def test_crawl_page_in_a_run_summarises_toward_the_search_and_the_think_before_it(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Search the river.", "Read the page."))
    server.route(SEARCH, search("Paris river"), search("corpus://seine", tool="crawl_page"))
    server.route(SUMMARY, summary("- Paris lies on the river Seine."))
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    run_coa(config, progress=False)

    (prompt,) = [
        r["body"]["messages"][-1]["content"] for r in server.requests if SUMMARY in r["body"]["messages"][-1]["content"]
    ]
    assert "Last web search query: Paris river" in prompt and "Why the page was opened: Look it up." in prompt
    (row,) = rows(config)
    assert row["verified"] and "Page 1 [corpus://seine] Summary:\n- Paris lies on the river Seine." in row["completion"]
    first = trace_of(config, row["trace_id"]).tool_calls()[0].result
    assert first.startswith("Found ") and "\n\n## Web Results\n1. [Paris](corpus://seine)\ncorpus://seine\n" in first


def test_the_code_agent_can_feed_stdin_as_its_prompt_says(server, fast_config, tmp_path):
    program = "```py\nn = int(input())\nprint(2**n + 3)\n```\n```sh\n10\n```"
    server.route(PLANNER, plan("Compute 2^10 + 3."))
    server.route(CODE, code(program))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("1027"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, math_task(tmp_path))
    run_coa(config, progress=False)

    assert "```sh block" in system_prompts(server, CODE)[0]
    (row,) = rows(config)
    assert row["verified"] and row["correct"] and program in row["completion"]
    result = trace_of(config, row["trace_id"]).tool_calls()[0].result
    assert result == "[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n1027\n[STDOUT:END]"
