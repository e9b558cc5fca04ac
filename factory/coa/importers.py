"""Agent logs you already have -> traces in the CoA schema, ready to distil.

    traces = load_agent_log("logs.jsonl", variant="mas")        # one log per line (or a .json list)
    trace = openai_trace({"messages": [...]}, variant="mas")     # one conversation
    trace = smolagents_trace({"steps": agent.memory.get_full_steps()}, variant="code")

OpenAI tool-calling conversations (`messages`, with assistant `tool_calls` and
`tool` replies matched by `tool_call_id`): the first user message is the
question; an assistant's text before its tool call is that call's `<think>`;
a tool reply is the call's observation; the last assistant message without
tool calls is the answer. Assistant text already written in AFM tags (`<think>`
`<plan>` `<reflection>` `<suggested_answer>` `<double_check>` `<answer>`) keeps
its structure, scores included.

smolagents step memory (`agent.memory.get_full_steps()`): the task step is the
question, a planning step a plan, an action step's model output the think for
its tool calls and its observations (or error) their result, the
`final_answer` tool call the answer.

Tool names are mapped to AFM's (each tool's declared aliases, tools/registry.py, plus yours); a tool with no AFM
name keeps its own and the distillation fails on `unknown_tag`, which says what
to map. Nothing is invented: a log without plans or thinks distils into a
failure naming the rule it breaks.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from .afm import double_check_score, parse_blocks, reflection_scores
from .tools.registry import alias_names
from .trace import Event, ToolCall, Trace

ARGUMENT_KEYS = ("query", "q", "url", "code", "answer", "input")
FINAL_ANSWER_TOOL = "final_answer"
TAGGED_KINDS = {"plan": "plan", "reflection": "reflection", "suggested_answer": "suggested_answer",
                "double_check": "double_check", "answer": "answer"}  # fmt: skip


class AgentLogError(FactoryError):
    """An agent log that cannot be read; the message names the file and record."""


def load_agent_log(
    path: str | Path, variant: str = "mas", fmt: str = "auto", tool_names: dict[str, str] | None = None
) -> list[Trace]:
    """Every log in a JSONL file (one per line) or a JSON file (one log or a list of them)."""
    path = Path(path)
    if not path.is_file():
        raise AgentLogError(f"{path}: no such agent log file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            loaded = json.loads(text)
            records = loaded if isinstance(loaded, list) and loaded and is_log(loaded[0]) else [loaded]
    except json.JSONDecodeError as exc:
        raise AgentLogError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return [log_to_trace(record, variant, fmt, tool_names, f"{path}:{i + 1}") for i, record in enumerate(records)]


def is_log(value: Any) -> bool:
    return isinstance(value, (dict, list)) and not (isinstance(value, dict) and "role" in value)


def log_to_trace(record: Any, variant: str, fmt: str, tool_names: dict[str, str] | None, where: str) -> Trace:
    if fmt == "auto":
        fmt = "openai" if openai_messages(record) is not None else "smolagents"
    if fmt == "openai":
        if openai_messages(record) is None:
            raise AgentLogError(f"{where}: no chat 'messages' in this record")
        return openai_trace(record, variant, tool_names)
    if fmt == "smolagents":
        return smolagents_trace(record, variant, tool_names)
    raise AgentLogError(f"unknown agent log format '{fmt}' (use auto, openai or smolagents)")


def openai_messages(record: Any) -> list[dict] | None:
    messages = record.get("messages") if isinstance(record, dict) else record
    if isinstance(messages, list) and messages and all(isinstance(m, dict) and "role" in m for m in messages):
        return messages
    return None


def text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def argument_of(arguments: Any) -> str:
    """The one argument an AFM tool takes, from a call's JSON arguments."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments  # smolagents code agents pass the code itself
    if isinstance(arguments, dict):
        for key in ARGUMENT_KEYS:
            if key in arguments:
                return str(arguments[key])
        if len(arguments) == 1:
            return str(next(iter(arguments.values())))
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def new_trace(record: Any, source: str, variant: str, question: str) -> Trace:
    meta = record if isinstance(record, dict) else {}
    digest = hashlib.sha1(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return Trace(trace_id=f"import:{meta.get('id') or digest}", task_id=meta.get("task_id"), source=source,
                 variant=variant, domain=meta.get("domain"), question=question or "(no question in the log)")  # fmt: skip


def tool_name(name: str, tool_names: dict[str, str] | None) -> str:
    return {**alias_names(), **(tool_names or {})}.get(name, name)


def finish(trace: Trace) -> Trace:
    answers = [event for event in trace.events if event.kind == "answer"]
    if answers:
        trace.final_answer = answers[-1].content
    else:
        trace.status, trace.reason = "exhausted", "the log has no final answer"
    return trace


def tagged_events(text: str, think: str | None = None) -> tuple[list[Event], str | None]:
    """Events from assistant text written in AFM tags; returns them and a think still waiting for its function."""
    events: list[Event] = []
    for block in parse_blocks(text):
        body = block.text.strip()
        if block.tag == "think":
            think = body
        elif block.tag in TAGGED_KINDS:
            events.append(tagged_event(block.tag, body, think))
            think = None
    return events, think


def tagged_event(tag: str, body: str, think: str | None) -> Event:
    if tag == "reflection":
        comment = "\n".join(line for line in body.splitlines() if not reflection_scores(line))
        return Event(agent="assistant", kind="reflection", think=think, content=comment, scores=reflection_scores(body))
    if tag == "double_check":
        comment = "\n".join(line for line in body.splitlines() if double_check_score(line) is None)
        score = double_check_score(body)
        scores = {"score": score} if score is not None else {}
        return Event(agent="assistant", kind="double_check", think=think, content=comment, scores=scores,
                     decision=None if score is None else "accept" if score >= 3 else "replan")  # fmt: skip
    return Event(agent="assistant", kind=TAGGED_KINDS[tag], think=think, content=body)


def openai_trace(record: Any, variant: str = "mas", tool_names: dict[str, str] | None = None) -> Trace:
    messages = openai_messages(record) or []
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    trace = new_trace(record, "import:openai", variant, users[0].strip() if users else "")
    results = {m.get("tool_call_id"): text_of(m.get("content")) for m in messages if m.get("role") == "tool"}
    assistants = [m for m in messages if m.get("role") == "assistant"]
    for i, message in enumerate(assistants):
        is_last = i == len(assistants) - 1
        trace.events += assistant_events(message, results, tool_names, is_last)
    mark_replans(trace)
    return finish(trace)


def assistant_events(message: dict, results: dict, tool_names: dict[str, str] | None, is_last: bool) -> list[Event]:
    text, calls = text_of(message.get("content")).strip(), message.get("tool_calls") or []
    events, think = tagged_events(text) if "<" in text and parse_blocks(text) else ([], text or None)
    for call in calls:
        function = call.get("function") or {}
        name, argument = function.get("name", ""), argument_of(function.get("arguments"))
        result = results.get(call.get("id"), "")
        events.append(call_event(name, argument, result, think, tool_names))
        think = None
    if not calls and not events and is_last and text:
        events.append(Event(agent="assistant", kind="answer", content=text))
    if events:
        events[0].messages = [message]
    return events


def call_event(name: str, argument: str, result: str, think: str | None, tool_names: dict[str, str] | None) -> Event:
    if name == FINAL_ANSWER_TOOL:
        return Event(agent="assistant", kind="answer", think=think, content=argument)
    ok = not result.lstrip().lower().startswith(("error", "traceback"))
    call = ToolCall(name=tool_name(name, tool_names), argument=argument, ok=ok, result=result)
    return Event(agent="assistant", kind="tool_call", think=think, tool=call)


def mark_replans(trace: Trace) -> None:
    plans = [event for event in trace.events if event.kind == "plan"]
    for event in plans[1:]:
        event.replan = True


def smolagents_trace(record: Any, variant: str = "code", tool_names: dict[str, str] | None = None) -> Trace:
    steps = record.get("steps") if isinstance(record, dict) else record
    if not isinstance(steps, list):
        raise AgentLogError("a smolagents log is a list of steps (agent.memory.get_full_steps()) or {'steps': [...]}")
    question = next((str(step["task"]) for step in steps if isinstance(step, dict) and step.get("task")), "")
    trace = new_trace(record, "import:smolagents", variant, question.strip())
    for step in steps:
        if isinstance(step, dict):
            trace.events += smolagents_events(step, tool_names)
    mark_replans(trace)
    return finish(trace)


def smolagents_events(step: dict, tool_names: dict[str, str] | None) -> list[Event]:
    if step.get("plan"):
        return [Event(agent="planner", kind="plan", content=str(step["plan"]).strip())]
    if "tool_calls" not in step and "model_output" not in step:
        final = step.get("final_answer", step.get("output"))
        return [Event(agent="assistant", kind="answer", content=str(final))] if final is not None else []
    think = text_of(step.get("model_output")).strip() or None
    result = text_of(step.get("observations")) or error_text(step.get("error"))
    events = []
    for call in step.get("tool_calls") or []:
        function = call.get("function") or call
        events.append(
            call_event(function.get("name", ""), argument_of(function.get("arguments")), result, think, tool_names)
        )
        think, result = None, ""
    return events


def error_text(error: Any) -> str:
    if isinstance(error, dict):
        return f"Error: {error.get('message') or error.get('type') or error}"
    return f"Error: {error}" if error else ""
