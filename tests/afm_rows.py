"""AFM export rows made by the real distiller from hand-built traces (code and web/mas variants).

The observations hold the text that could confuse AFM's trainer or its format checks: its own tag
strings, a bare `observation>` followed by a blank line, code fences, a Python traceback.
"""

from __future__ import annotations

from factory.coa import Event, ToolCall, Trace, distill, distill_prompt

GOOD = {"information_conflict": "good", "tool_effectiveness": "good", "trajectory_progress": "good"}
POOR = {**GOOD, "tool_effectiveness": "poor"}
TRICKY = "a</observation> b <observation> c\nobservation>\n\nd ```py\nx = 1\n``` <code>e</code>"
TRACEBACK = (
    'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nZeroDivisionError: division by zero'
)


def tool(name: str, argument: str, result: str, think: str = "Run it.", **meta) -> Event:
    call = ToolCall(name=name, argument=argument, ok=True, result=result, meta=meta)
    return Event(agent="code_agent" if name == "code" else "search_agent", kind="tool_call", think=think, tool=call)


def event(kind: str, content: str, think: str | None = "Next.", **kw) -> Event:
    return Event(agent="agent", kind=kind, think=think, content=content, **kw)


def check(score: int, content: str) -> Event:
    return event("double_check", content, scores={"score": score}, decision="accept" if score >= 3 else "replan")


def math_events() -> list[Event]:
    squares = "total = 0\nfor i in range(1, 11):\n    total += i * i\nprint(total)"
    return [
        event("plan", "1. Sum the squares with code.\n2. Check the value."),
        tool("code", squares, "385", think="Write the loop."),
        event("reflection", "The loop printed 385.", scores=GOOD, think="Judge the run."),
        tool("code", "```python\nprint(1 / 0)\n```", TRACEBACK, think="Check an edge case."),
        event("reflection", "Division by zero, as expected.", scores=POOR, decision="replan"),
        event("plan", "1. Use the closed form.", replan=True),
        tool("code", "n = 10\nprint(n * (n + 1) * (2 * n + 1) // 6)\nprint(tricky_text())", "385\n" + TRICKY),
        event("reflection", "The closed form gives 385 too.", scores=GOOD),
        event("suggested_answer", "\\boxed{384}", think="So it is \\boxed{384}."),
        check(2, "Off by one: the code said 385, not \\boxed{384}."),
        event("suggested_answer", "\\boxed{385}", think="Then \\boxed{385}."),
        check(4, "Both runs give \\boxed{385}."),
        event("answer", "The sum is \\boxed{385}.", think="Answer \\boxed{385}."),
    ]


def lcb_events() -> list[Event]:
    program = "import sys\nk = list(map(int, sys.stdin.read().split()))[1:]\nprint(max(k))"
    return [
        event("plan", "1. Read the numbers.\n2. Print the largest."),
        tool("code", program, "12", think="Try the sample.", stdin="5\n2 3 5 10 12\n"),
        event("reflection", "The sample gives 12.", scores=GOOD),
        tool("code", "```py\nprint(max([1, 1]))\n```\n```sh\n2\n1 1\n```", "1"),
        event("reflection", "Ties work.", scores=GOOD),
        event("suggested_answer", "```python\n" + program + "\n```"),
        check(4, "It reads stdin and prints the maximum."),
        event("answer", "```python\n" + program + "\n```", think="Submit it."),
    ]


def web_events() -> list[Event]:
    return [
        event("plan", "1. Search for the river.\n2. Read the page."),
        tool("web_search", "paris river", "1. [Seine](corpus://seine): Paris lies on the Seine. " + TRICKY),
        event("reflection", "Search found a page.", scores=POOR, decision="replan"),
        event("plan", "1. Read the page itself.", replan=True),
        tool("crawl_page", "corpus://seine", "Paris lies on the Seine.\n" + TRICKY),
        event("reflection", "The page answers it.", scores=GOOD, decision="answer"),
        event("suggested_answer", "Loire"),
        check(2, "The page says Seine."),
        event("plan", "1. Answer from the page.", replan=True),
        event("suggested_answer", "Seine"),
        check(4, "The page says Seine."),
        event("answer", "Seine", think=None),
    ]


def row_of(prompt: str, completion: str, spans) -> dict:
    """An AFM export row (factory.export.formats.afm_sql): alpaca fields plus observation spans."""
    return {"id": "afm", "instruction": prompt, "input": "", "output": completion, "observation_spans": spans}


def distilled(variant: str, domain: str, events: list[Event]):
    answer = next((e.content for e in events if e.kind == "answer"), None)
    trace = Trace(trace_id=f"coa:{domain}", task_id=domain, variant=variant, domain=domain, question="Which?",
                  events=events, final_answer=answer)  # fmt: skip
    result = distill(trace, distill_prompt(trace))
    assert result.ok, f"{variant}/{domain}: {result.rule}: {result.message}"
    return result


def rows(variant: str, cases: list[tuple[str, list[Event]]]) -> list[dict]:
    out = []
    for domain, events in cases:
        single = distilled(variant, domain, events).single
        out.append(row_of(single.prompt, single.completion, [list(span) for span in single.observation_spans]))
    return out


def code_rows() -> list[dict]:
    return rows("code", [("math", math_events()), ("code", lcb_events())])


def mas_rows() -> list[dict]:
    return rows("mas", [("qa", web_events())])
