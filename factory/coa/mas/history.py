"""The run so far as text, for the next role's prompt: newest work kept when it must be cut.

A tool result is shown whole: it is already the observation (cut once by the
toolbox), the same text the distilled trajectory shows. When the run outgrows
`max_chars`, whole older entries are left out, never part of one.
"""

from __future__ import annotations

from ..trace import Event


def event_line(event: Event, step: int) -> str | None:
    if event.kind == "plan":
        return f"{'New plan' if event.replan else 'Plan'}:\n{event.content}"
    if event.kind == "tool_call" and event.tool is not None:
        status = "" if event.tool.ok else " (failed)"
        return f"Step {step}: {event.tool.name}({event.tool.argument!r}){status}\nResult:\n{event.tool.result}"
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
    kept: list[str] = []
    size = 0
    for line in reversed(lines):  # newest first, while they fit; the newest always shows, whole
        if kept and size + len(line) > max_chars:
            break
        kept.insert(0, line)
        size += len(line) + 2
    left_out = len(lines) - len(kept)
    return "\n\n".join(([f"[{left_out} earlier entries left out]"] if left_out else []) + kept)
