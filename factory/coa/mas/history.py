"""The run so far as text, for the next role's prompt: newest work kept when it must be cut."""

from __future__ import annotations

from ..trace import Event

RESULT_CHARS = 1500  # of one tool result; the reflector and answerer need the gist, not the page


def event_line(event: Event, step: int) -> str | None:
    if event.kind == "plan":
        return f"{'New plan' if event.replan else 'Plan'}:\n{event.content}"
    if event.kind == "tool_call" and event.tool is not None:
        result = event.tool.result
        if len(result) > RESULT_CHARS:
            result = result[:RESULT_CHARS] + " [...]"
        status = "" if event.tool.ok else " (failed)"
        return f"Step {step}: {event.tool.name}({event.tool.argument!r}){status}\nResult:\n{result}"
    if event.kind == "reflection":
        ratings = ", ".join(f"{name}: {value}" for name, value in event.scores.items())
        return f"Reflection: {event.content} ({ratings})"
    if event.kind == "suggested_answer":
        return f"Suggested answer: {event.content}"
    if event.kind == "double_check":
        return f"Double check: {event.content} (score {event.scores.get('score')}/4)"
    return None  # errors and the final answer are not work to build on


def history_text(events: list[Event], max_chars: int) -> str:
    lines, step = [], 0
    for event in events:
        step += event.kind == "tool_call"
        line = event_line(event, step)
        if line:
            lines.append(line)
    text = "\n\n".join(lines)
    if len(text) > max_chars:
        text = "[earlier work cut]\n" + text[-max_chars:]
    return text
