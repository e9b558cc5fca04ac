"""The run so far as text, for the next role's prompt: newest work kept when it must be cut.

A tool result is shown whole: it is already the observation (cut once by the
toolbox), the same text the distilled trajectory shows. Calls are numbered as
the answerer cites them ("Call 3"), with the plan step they worked on. The
current plan is not repeated here: the prompt shows it once, with each step's
state; an earlier plan that a re-plan replaced is shown as such. When the run
outgrows `max_chars`, whole older entries are left out, never part of one.
"""

from __future__ import annotations

from ..trace import Event


def event_line(event: Event, call: int, current_plan: bool) -> str | None:
    if event.kind == "plan":
        if current_plan:
            return "I made the plan shown above." if not event.replan else "I planned again: the plan shown above."
        return f"Earlier plan (replaced later):\n{event.content}"
    if event.kind == "tool_call" and event.tool is not None:
        status = "" if event.tool.ok else " (failed)"
        step = f" for step {event.step}" if event.step else ""  # of the plan in force when the call was made
        argument = f"\n{event.tool.argument}" if event.tool.name == "code" else f"({event.tool.argument!r})"
        return f"Call {call}{step}: {event.tool.name}{argument}{status}\nResult:\n{event.tool.result}"
    if event.kind == "reflection":
        settled = f"; also settled steps {', '.join(map(str, event.settles))}" if event.settles else ""
        return f"Reflection on call {call}: {event.content} (step: {event.decision}{settled})"
    if event.kind == "suggested_answer":
        return f"Suggested answer: {event.content}"
    if event.kind == "double_check":
        asked = f" One more check: {event.check}" if event.check else ""
        return f"Double check: {event.content} (score {event.scores.get('score')}/4).{asked}"
    return None  # errors and the final answer are not work to build on


def history_text(events: list[Event], max_chars: int) -> str:
    last_plan = max((i for i, event in enumerate(events) if event.kind == "plan"), default=-1)
    lines, call = [], 0
    for i, event in enumerate(events):
        call += event.kind == "tool_call"
        line = event_line(event, call, i == last_plan)
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
