"""Agent logs from outside (OpenAI tool calling, smolagents memory) -> traces -> distilled trajectories."""

import json

import pytest

from factory.coa import AgentLogError, distill, load_agent_log, openai_trace, run_coa_import, smolagents_trace
from factory.coa.afm import validate_afm
from factory.store import Store

# An agent prompted in AFM style, logged as OpenAI chat messages with tool calls.
TAGGED_LOG = {
    "id": "run-7",
    "messages": [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": "Which river flows through Paris?"},
        {"role": "assistant", "content": "<think>I need the river.</think><plan>1. Search it.</plan>"
                                         "<think>Search for Paris.</think>",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "search", "arguments": json.dumps({"query": "Paris river"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Paris lies on the Seine."},
        {"role": "assistant", "content": "<think>That answers it.</think><reflection>Clear result.\n"
                                         "Information conflict: good\nTool effectiveness: good\n"
                                         "Trajectory progress: good</reflection><think>Propose it.</think>"
                                         "<suggested_answer>Seine</suggested_answer><think>Check.</think>"
                                         "<double_check>The page says so.\nscore: 4</double_check>"},
        {"role": "assistant", "content": "<answer>Seine</answer>"},
    ],
}  # fmt: skip

PLAIN_LOG = [
    {"role": "user", "content": [{"type": "text", "text": "What is 6 times 7?"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {
        "name": "python", "arguments": json.dumps({"code": "print(6*7)"})}}]},
    {"role": "tool", "tool_call_id": "a", "content": "42"},
    {"role": "assistant", "content": "The answer is 42."},
]  # fmt: skip

SMOLAGENTS_STEPS = [
    {"task": "What is 6 times 7?"},
    {"plan": "1. Multiply with Python.", "model_output_message": {"role": "assistant", "content": "..."}},
    {"step_number": 1, "model_output": "Thought: multiply.", "observations": "Execution logs:\n42",
     "tool_calls": [{"id": "x", "type": "function",
                     "function": {"name": "python_interpreter", "arguments": "print(6*7)"}}]},
    {"step_number": 2, "model_output": "Thought: done.", "observations": None, "error": None,
     "tool_calls": [{"id": "y", "type": "function", "function": {"name": "final_answer", "arguments": {"answer": 42}}}]},
]  # fmt: skip


def test_a_tagged_openai_log_becomes_a_valid_mas_trajectory():
    trace = openai_trace(TAGGED_LOG, variant="mas")
    assert trace.trace_id == "import:run-7" and trace.question == "Which river flows through Paris?"
    assert [e.kind for e in trace.events] == ["plan", "tool_call", "reflection", "suggested_answer", "double_check",
                                              "answer"]  # fmt: skip
    call = trace.events[1]
    assert call.think == "Search for Paris." and (call.tool.name, call.tool.argument) == ("web_search", "Paris river")
    assert call.tool.result == "Paris lies on the Seine." and trace.events[0].messages[0]["role"] == "assistant"
    assert trace.events[2].scores["tool_effectiveness"] == "good" and trace.events[4].scores == {"score": 4}
    result = distill(trace, "Which river flows through Paris?")
    assert result.ok, result.message
    assert validate_afm(result.single.completion, "mas").ok and trace.final_answer == "Seine"


def test_a_plain_log_imports_and_its_distillation_names_what_is_missing():
    trace = openai_trace(PLAIN_LOG, variant="code")
    assert trace.question == "What is 6 times 7?" and trace.final_answer == "The answer is 42."
    assert trace.events[0].tool.name == "code" and trace.events[0].tool.argument == "print(6*7)"
    assert distill(trace, "p").rule == "plan_first"  # nothing is invented: no plan in the log, no trajectory
    unmapped = openai_trace(
        [*PLAIN_LOG[:1], {**PLAIN_LOG[1], "content": "<plan>1. Run it.</plan>"}, *PLAIN_LOG[2:]],
        tool_names={"python": "calculator"},
    )
    assert distill(unmapped, "p").rule in ("unknown_tag", "think_before")


def test_smolagents_memory_becomes_a_trace():
    trace = smolagents_trace(SMOLAGENTS_STEPS, variant="code")
    assert trace.source == "import:smolagents" and trace.question == "What is 6 times 7?"
    assert [e.kind for e in trace.events] == ["plan", "tool_call", "answer"]
    assert trace.events[1].tool.name == "code" and "42" in trace.events[1].tool.result
    assert trace.events[1].think == "Thought: multiply." and trace.final_answer == "42"


def test_a_log_file_imports_into_a_run_and_rerunning_skips_it(tmp_path):
    path = tmp_path / "logs.jsonl"
    path.write_text(json.dumps(TAGGED_LOG) + "\n" + json.dumps({"messages": PLAIN_LOG, "id": "plain"}) + "\n")
    assert [t.trace_id for t in load_agent_log(path)] == ["import:run-7", "import:plain"]
    outcome = run_coa_import(tmp_path / "run", path, variant="mas", progress=False)
    assert outcome.funnel == {"tasks": 2, "answered": 2, "distilled": 1, "correct": 0}
    assert outcome.failures == {"plan_first": 1}
    again = run_coa_import(tmp_path / "run", path, variant="mas", progress=False)
    assert again.funnel == outcome.funnel
    with Store.open(tmp_path / "run") as store:
        assert store.query("SELECT source, correct FROM trajectories WHERE verified") == [("import", None)]


def test_unreadable_logs_are_one_line_errors(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"messages": [\n')
    with pytest.raises(AgentLogError, match="bad.jsonl: not valid JSON"):
        load_agent_log(tmp_path / "bad.jsonl")
    with pytest.raises(AgentLogError, match="no such agent log"):
        load_agent_log(tmp_path / "missing.jsonl")
    (tmp_path / "odd.json").write_text(json.dumps({"text": "no messages"}))
    with pytest.raises(AgentLogError, match="a smolagents log is a list of steps"):
        load_agent_log(tmp_path / "odd.json")
