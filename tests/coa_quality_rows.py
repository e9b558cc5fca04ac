"""A real run store of coa / import rows with known openings, tool calls and grounding stats.

Shared by tests/test_coa_quality.py and tests/test_filters_grounded_template.py; rows are written with
the store's writer (`upsert_trajectory`, via tests/filter_rows.py), as the coa path writes them.

Verified rows a, b, c, d, e. Reflection blocks (9): "this result shows" opens 3 (a twice, b once): 33.3%, in
2 of 5 rows. Think blocks (14): "so the answer" opens 3 (a, b, d): 21.4%; "i will search" 2 (a, b): 14.3%.
Every other 3-word opening opens one block. The unverified row u holds the same templates and counts in no
figure. Tool calls 6, 1, 1, 3 (d: no count in its stats, 3 tool blocks), 3; claims grounded 3/3, 2/3, 2/2,
unknown, 0/1; c answered before its first tool.
"""

from __future__ import annotations

import json
from pathlib import Path

from filter_rows import add_coa, add_refine, refine_turns

from factory.coa.afm.scores import reflection_text
from factory.store import Store

GOOD = {"information_conflict": "good", "tool_effectiveness": "good", "trajectory_progress": "good"}


def completion(steps: list[tuple[str, str, str, str]], final: str, answer: str) -> str:
    """An AFM completion: a plan, then (think, tool call, observation, reflection) per step, a think and the answer.

    Reflections carry their score lines as the distiller writes them (after the comment)."""
    parts = ["<plan>\n1. Look it up.\n2. Answer.\n</plan>"]
    for think, tag, argument, reflection in steps:
        parts += [f"<think>\n{think}\n</think>", f"<{tag}>\n{argument}\n</{tag}>",
                  "<observation>\nsome result\n</observation>\n",
                  f"<reflection>\n{reflection_text(GOOD, reflection)}\n</reflection>"]  # fmt: skip
    return "\n".join([*parts, f"<think>\n{final}\n</think>", f"<answer>\n{answer}\n</answer>"])


def stats(tool_calls: int | None, claims: int | None = None, grounded: int | None = None, *,
          ungrounded: list[str] | None = None, before: bool | None = None) -> str:  # fmt: skip
    """Stats as the coa run writes them; None leaves a field out (a row written before it existed)."""
    fields = {"tool_calls": tool_calls, "reflections": 1, "claims": claims, "grounded_claims": grounded,
              "ungrounded_claims": ungrounded, "answer_before_tool": before}  # fmt: skip
    return json.dumps({k: v for k, v in fields.items() if v is not None})


ROWS = {
    "coa:a": dict(
        completion=completion(
            [("I will search for the river.", "web_search", "paris river", "This result shows the river."),
             ("Let me read the page.", "crawl_page", "corpus://seine", "This result shows the city.")],
            "So the answer is Seine.", "Seine"),
        stats=stats(6, 3, 3, before=False)),
    "coa:b": dict(
        completion=completion(
            [("I will search for the date.", "web_search", "lusitania sank", "This result shows a date."),
             ("A first answer, 1914, did not hold up.", "web_search", "lusitania 1915", "Found it: 1915.")],
            "So the answer is 1915.", "1915"),
        stats=stats(1, 3, 2, ungrounded=["he was born before 1871"], before=False)),
    "coa:c": dict(
        completion=completion([("Let me look up Vienna.", "web_search", "vienna river", "The page says Danube.")],
                              "Vienna lies on the Danube.", "Danube"),
        stats=stats(1, 2, 2, before=True)),
    "coa:d": dict(  # written before the coa run recorded tool calls or claims: its 3 tool blocks count
        completion=completion(
            [("Search the archive.", "web_search", "archive", "Nothing useful came back."),
             ("Try the index.", "web_search", "index", "The index lists it."),
             ("Open the entry.", "crawl_page", "corpus://entry", "The entry gives 12.")],
            "So the answer is 12.", "12"),
        stats=json.dumps({"reflections": 3})),
    "import:e": dict(
        source="import",
        completion=completion([("Sum the squares.", "code", "print(385)", "It printed 385.")],
                              "Checking it: the sum is 385.", "385"),
        stats=stats(3, 1, 0, ungrounded=["385"], before=False)),
    "coa:u": dict(  # unverified: a failure row, counted by no figure and judged as any row
        verified=False, rule="tag_order",
        completion=completion([("So the answer is here.", "web_search", "x", "This result shows nothing.")],
                              "So the answer is x.", "x"),
        stats=stats(9, 1, 0, before=True)),
}  # fmt: skip


def seed_quality_run(run_dir: Path) -> Path:
    """The rows above plus two refine rows (which no coa figure or coa filter may touch)."""
    with Store.open(run_dir) as store:
        for minute, (tid, row) in enumerate(ROWS.items()):
            add_coa(store, tid, f"Question {tid}?", minute, **dict(row))
        for minute, persona in enumerate(("p1", "p2"), len(ROWS)):
            add_refine(store, persona, f"Task of {persona}", minute, n_turns=5, n_corrections=1,
                       stats=json.dumps({"turns": 5, "assistant_turns": 2, "corrections": 1}),
                       turns=refine_turns("go(kitchen)", "take(flour)"))  # fmt: skip
    return run_dir
