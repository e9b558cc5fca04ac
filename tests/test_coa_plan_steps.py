"""The plan worked one step per tool call, over real HTTP (scripted loopback replies) and the real sandbox:
each call is told its step, the answer waits for every step, a reflection may settle later steps the same
result shows, a code answer is run on every public sample before the double check sees it, and the
claims an answer rests on are held against the observations they cite."""

import json

from loopback_server import ok
from test_coa_mas import (
    ANSWERER,
    CODE,
    PLANNER,
    REFLECTOR,
    SEARCH,
    VERIFIER,
    answer,
    check,
    code,
    make_config,
    plan,
    qa_task,
    reflect,
    rows,
    search,
    trace_of,
    write_tasks,
)

from factory.coa import run_coa
from factory.coa.grounding import claim_grounded, key_terms
from factory.coa.plan import Plan, first_sentence
from factory.coa.samples import public_samples, untested
from factory.coa.trace import Event, ToolCall, Trace

PROGRAM = "n = int(input())\nprint(n * 2)\n"
QUESTION = (
    "Print twice N.\n\nSample Input 1\n\n3\n\nSample Output 1\n\n6\n\nSample Input 2\n\n10\n\nSample Output 2\n\n20\n"
)


def user_messages(server, marker):
    return [
        r["body"]["messages"][1]["content"] for r in server.requests if marker in r["body"]["messages"][0]["content"]
    ]


def test_each_call_is_told_its_step_and_the_answer_waits_for_every_step(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Find the river of Paris.", "Find where the Loire flows."))
    server.route(SEARCH, search("Paris river"), search("Loire river"))
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    run_coa(config, progress=False)

    first, second = user_messages(server, SEARCH)
    assert "step to work on now: step 1: Find the river of Paris." in first
    assert "step to work on now: step 2: Find where the Loire flows." in second
    assert "1. Find the river of Paris. [done (call 1)]" in second  # the plan shows each step's state, once
    assert second.count("Find the river of Paris.") == 1
    stats = json.loads(rows(config)[0]["stats"])
    assert (stats["plan_steps"], stats["steps_done"], stats["tool_calls"]) == (2, 2, 2)


def test_a_result_that_settles_a_later_step_saves_its_call(server, fast_config, tmp_path):
    server.route(PLANNER, plan("Find the river of Paris.", "Find which city lies on the Seine.", "Check the Loire."))
    server.route(SEARCH, search("Paris river"), search("Loire"))
    settles = ok(json.loads(reflect().content) | {"also_settled": [2]})
    server.route(REFLECTOR, settles, reflect("drop"))
    server.route(ANSWERER, answer("Seine"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, qa_task(tmp_path))
    run_coa(config, progress=False)

    trace = trace_of(config, "coa:t/q1")
    assert [call.argument for call in trace.tool_calls()] == ["Paris river", "Loire"]  # no call for step 2
    assert [(s["number"], s["state"], s["calls"]) for s in trace.steps] == [
        (1, "done", [1]), (2, "done", [1]), (3, "dropped", [2])
    ]  # fmt: skip
    assert "also settled steps 2" in user_messages(server, SEARCH)[1]


def test_a_code_answer_goes_back_until_it_ran_on_every_public_sample(server, fast_config, tmp_path):
    tests = json.dumps({"stdin": ["3\n", "10\n"], "expected_output": ["6\n", "20\n"]})  # the hidden tests
    tasks = write_tasks(tmp_path / "code.jsonl", {"id": "c1", "question": QUESTION, "domain": "code",
                        "reward_model": {"ground_truth": tests}})  # fmt: skip
    fenced = f"```py\n{PROGRAM}```"
    # A harness run (the function called with a value) is not a run as the judge makes it.
    server.route(PLANNER, plan("Write the program and try it on a value."))
    server.route(CODE, code("def twice(n):\n    return n * 2\nprint(twice(3))"),
                 code(f"```py\n# doubled\n{PROGRAM}```\n```sh\n3\n```"), code(f"{fenced}\n```sh\n10\n```"))  # fmt: skip
    server.route(REFLECTOR, reflect(), reflect(), reflect())
    server.route(ANSWERER, answer(fenced, [{"claim": "prints 6 for 3", "call": 2}]),
                 answer(fenced, [{"claim": "prints 6 for 3 and 20 for 10", "call": 3}]))  # fmt: skip
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, tasks)
    run_coa(config, progress=False)

    (row,) = rows(config)
    assert row["verified"] and row["correct"]
    trace = trace_of(config, row["trace_id"])
    assert [s["text"][:40] for s in trace.steps[1:]] == ["Run the final program, exactly as it wil"] * 2
    assert [e.kind for e in trace.events].count("suggested_answer") == 2  # the first went back for the samples
    assert untested(trace, trace.final_answer, public_samples(QUESTION)) == []  # comments aside, both ran


def test_plan_states_and_reasons():
    plan = Plan.from_steps(["a", "b", "c"])
    plan.steps[0].calls.append(1)
    plan.settle(plan.steps[0], "replan", others=[2])  # a result the plan is thrown out for settles nothing
    assert [s.state for s in plan.steps] == ["open", "open", "open"]
    plan.settle(plan.steps[0], "done", others=[2, 9])
    assert [s.state for s in plan.steps] == ["done", "done", "open"] and plan.steps[1].calls == [1]
    plan.settle(plan.steps[2], "drop", "Moot since the page names it. The rest is detail (see call 2)")
    assert plan.steps[2].note == "Moot since the page names it." and plan.current() is None
    assert first_sentence("x" * 300).endswith("…") and len(first_sentence("x" * 300)) == 240


def test_claims_are_held_against_the_observation_they_cite():
    observation = "Madagascar: population 28,915,653. Capital: Antananarivo."
    assert claim_grounded("Madagascar has 28915653 people", observation, "What is +261?")
    assert not claim_grounded("Madagascar has 28 million people", observation, "What is +261?")
    assert not claim_grounded("Its capital is Toamasina", observation, "")
    assert claim_grounded("The +261 country is Madagascar", observation, "Who dials +261?")  # +261: the question's
    assert key_terms("According to the page, Lima is in Peru.") == ["lima", "peru"]  # an opener is no name


def test_recall_before_the_first_observation_is_marked():
    def trace(first_think):
        call = ToolCall(name="web_search", argument="q", ok=True, result="Lusitania sank in May 1915.")
        events = [Event(agent="planner", kind="plan", think=first_think, content="1. Search."),
                  Event(agent="search_agent", kind="tool_call", think="Search.", tool=call),
                  Event(agent="answerer", kind="suggested_answer", content="May 1915")]  # fmt: skip
        return Trace(trace_id="t", variant="mas", domain="qa", question="When?", events=events, final_answer="May 1915")

    from factory.coa.grounding import grounding

    assert grounding(trace("I recall it sank in May 1915; I will confirm.")).answer_before_tool is True
    found = grounding(trace("I need the date of the sinking."))
    assert found.answer_before_tool is False and (found.claims, found.grounded) == (1, 1)


def test_the_coa_prompts_give_guidance_without_phrases_or_values_to_copy():
    from factory.paths import prompts_dir

    folder = prompts_dir() / "coa"
    texts = {path.name: path.read_text() for path in folder.glob("*.md")}
    for name, text in texts.items():
        # An example reply ({"think": "...", "score": 3}) hands a model its defaults and its opening words.
        assert '{"think"' not in text and '{{"think"' not in text, name
        assert "This result shows" not in text and "I will check" not in text, name
    assert '"good", "average" or "poor"' in texts["reflector.md"] and "good is the best case" in texts["reflector.md"]
    assert not [line for line in texts["crawl_summary.md"].splitlines() if line[:2] in ("1.", "2.", "3.")]


def test_figures_written_another_way_are_still_found_and_wrong_ones_are_not():
    page = "Madagascar: population 28,915,653."
    assert claim_grounded("Madagascar has 28.9 million people", page, "q")
    assert not claim_grounded("Madagascar has 29.9 million people", page, "q")
    program = "n = 2 * 10**5\nprint(round(elapsed, 4))\n[STDOUT:BEGIN]\n0.4213\n[STDOUT:END]"
    assert claim_grounded("With N = 200000 it finished in 0.42 s", program, "q")  # 2*10**5, and 0.4213 rounded
    assert not claim_grounded("With N = 300000 it finished in 0.42 s", program, "q")
