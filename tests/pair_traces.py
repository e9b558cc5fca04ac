"""A coa run folder for the "when to act" pairs (factory/coa/pairs), made with the real distiller and checkers.

`coa_run(run_dir)` records, under one `factory coa`-style run whose config names the task files, the
traces below through `record_trace` (the coa path's own distill / check / store), and the closed-book
rollouts `factory passrate` would have written (each judged by the task's checker):

| trajectory | tool? | reference | recall reply (RECALL, tests/pair_recall.py) | closed-book rollouts |
|---|---|---|---|---|
| Thailand's most populous neighbour (synth depth, mas) | web_search | 53582855 | "54 million" (wrong) | - |
| Brazil + Mongolia + PNG areas (synth width, mas; its own answer wrong) | web_search | 10542717 | 10542723 (wrong) | - |
| first Nobel prize in physics (nq, mas) | web_search | Röntgen | right | 8 of 8 right |
| 1-2+3-...-100 (MATH500/16, code) | code | -50 | right | 2 judged |
| constant term of (10x^3 - 1/(2x^2))^5 (MATH500/34, code) | code | -125 | right | 3 of 8 right |
| greatest integer below (√7 + √5)^6 (MATH500/21, code) | code | 13535 | 13536 (wrong), its own score 2 | - |
| OPEC's member count (nq, mas) | web_search | 14 | 12, its own score 2 | - |
| the owner of Reading FC (nq, mas) | web_search | Dai Yongge ... | prose, not JSON (GARBAGE) | - |
| the first declaration of human rights (nq, mas) | none | Cyrus | - | - |
| the Danube question, a user row without an answer (mas) | web_search | none | - | - |
| the next Deadpool release (nq, mas; not in the task files) | web_search | - | - | - |

The task rows are real: the two synthesized ones as benchmarks/data/coa_replay/capable_v1 recorded them
(its closed-book "policy" replies are where the wrong recall answers come from), the nq and MATH500 ones
from the task fixtures (tests/task_files.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from afm_rows import GOOD, check, event, tool
from pair_recall import GARBAGE, RECALL  # noqa: F401 (the recorded replies, imported from here)
from task_files import task_file

from factory.checks import default_checker
from factory.coa import Trace
from factory.coa.batch import record_trace
from factory.passrate.prompting import Policy
from factory.passrate.rows import RolloutWriter
from factory.run import open_run
from factory.run_config import FactoryConfig
from factory.store import utcnow
from factory.tasks import Task, load_tasks

REPLAY = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "coa_replay" / "capable_v1"
CLOSED_BOOK = "qwen-closed-book"  # the rollouts label
NOBEL, READING, CYRUS, DEADPOOL, OPEC = (
    "who got the first nobel prize in physics", "who is the owner of reading football club",
    "who wrote the first declaration of human rights", "when is the next deadpool movie being released",
    "how many countries are a part of opec",
)  # fmt: skip
DANUBE = "Which river flows through the capital of the country whose internet top-level domain is .hu?"


def rows_of(path: Path, questions: list[str]) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row["question"] in questions]


def write_task_files(folder: Path) -> tuple[Path, Path]:
    """(the qa file `coa.tasks` names, the math file `passrate.tasks` names)."""
    replayed = [json.loads((REPLAY / f"{name}.json").read_text())["task"] for name in
                ("depth-3f426491a2f9", "width-fa0f69d39c65")]  # fmt: skip
    nq = rows_of(task_file("nq_full.jsonl"), [NOBEL, READING, CYRUS, OPEC])
    unanswered = {"question": DANUBE, "data_source": "user"}
    qa = folder / "qa_tasks.jsonl"
    qa.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in [*replayed, *nq, unanswered]))
    return qa, task_file("math500.parquet")


def web_trace(task: Task, plan: str, calls: list[tuple[str, str, str, str]], answer: str) -> Trace:
    """A web-agent trace: plan, (search, reflection) per call, suggested answer, double check, answer."""
    events = [event("plan", plan, think="I need sources for each link of the question before answering.")]
    for query, result, think, finding in calls:
        events += [tool("web_search", query, result, think=think), event("reflection", finding, scores=GOOD)]
    events += [event("suggested_answer", answer, think="The results give the answer."),
               check(4, f"The results show {answer}."), event("answer", answer, think=None)]  # fmt: skip
    return Trace(trace_id=f"coa:{task.id}", task_id=task.id, variant="mas", domain=task.domain, question=task.question,
                 tools=["web_search", "crawl_page"], events=events, final_answer=answer)  # fmt: skip


def code_trace(task: Task, program: str, printed: str, answer: str, finding: str = "") -> Trace:
    finding = finding or f"The program printed {printed}, which matches the derivation."
    events = [
        event("plan", "1. Compute the value with code.\n2. Check it against a short derivation."),
        tool("code", program, printed, think="A direct computation settles the value."),
        event("reflection", finding),
        event("answer", f"\\boxed{{{answer}}}", think=f"The answer is {answer}."),
    ]
    return Trace(trace_id=f"coa:{task.id}", task_id=task.id, variant="code", domain="math", question=task.question,
                 tools=["code"], events=events, final_answer=f"\\boxed{{{answer}}}")  # fmt: skip


def traces(tasks: dict[str, Task]) -> list[tuple[Trace, Task]]:
    by_question = {task.question: task for task in tasks.values()}
    thai, tugrik = tasks["synth:depth/depth-3f426491a2f9"], tasks["synth:width/width-fa0f69d39c65"]
    nobel, reading, cyrus, danube, opec = (by_question[q] for q in (NOBEL, READING, CYRUS, DANUBE, OPEC))
    sum16, term34, floor21 = tasks["MATH500/16"], tasks["MATH500/34"], tasks["MATH500/21"]
    deadpool = Task(id="nq/deadpool", question=DEADPOOL, answers=["May 18, 2018"], domain="qa", source="nq")
    myanmar = "1. [Myanmar](corpus://country/MMR): Myanmar ... Population: 53,582,855. Capital: Naypyidaw."
    return [
        (web_trace(thai, "1. Find the country of THB.\n2. Find its most populous neighbour and its population.", [
            ("ISO 4217 THB currency", "1. [Baht](corpus://currency/THB): The Baht (ISO 4217 THB, numeric 764) is "
             "the currency of Thailand.", "A search on the code should bring up the currency's page.",
             "THB is the Baht, used in Thailand."),
            ("Thailand land borders neighbouring countries", "1. [Thailand](corpus://country/THA): Thailand shares "
             "land borders with Myanmar, Cambodia, Laos and Malaysia. Its most populous neighbour is Myanmar.",
             "Now the neighbours of Thailand.", "Thailand's page names Myanmar as its most populous neighbour."),
            ("Myanmar population", myanmar, "Myanmar's own page should state its population.",
             "Myanmar's population is 53,582,855."),
        ], "53,582,855"), thai),
        (web_trace(tugrik, "1. Identify the two countries.\n2. Read the three areas and add them.", [
            ("Tugrik currency country", "1. [Tugrik](corpus://currency/MNT): The Tugrik (MNT) is used in Mongolia.",
             "The tugrik's page names its country.", "The Tugrik is Mongolia's currency."),
            ("Brazil Mongolia Papua New Guinea area km2", "1. [Brazil](corpus://country/BRA): Area: 8,515,767 km2. "
             "2. [Papua New Guinea](corpus://country/PNG): capital Port Moresby; Area: 462,840 km2.",
             "One search for the areas.", "Brazil 8,515,767 km2 and Papua New Guinea 462,840 km2."),
        ], "10,542,723"), tugrik),  # Mongolia's area taken as 1,564,116 from memory: wrong by 6
        (web_trace(nobel, "1. Find who received the 1901 Nobel Prize in Physics.", [
            ("first Nobel Prize in Physics 1901", "1. [Nobel Prize in Physics](corpus://nobel/physics): The first "
             "prize, in 1901, was awarded to Wilhelm Conrad Röntgen for the discovery of X-rays.",
             "A search for the first laureate.", "The 1901 prize went to Wilhelm Conrad Röntgen."),
        ], "Wilhelm Conrad Röntgen"), nobel),
        (code_trace(sum16, "print(sum(k if k % 2 else -k for k in range(1, 101)))", "-50", "-50"), sum16),
        (code_trace(term34, "from math import comb\nprint(comb(5, 3) * 10**2 * (-1/2)**3)", "-125.0", "-125"), term34),
        (code_trace(floor21, FLOOR21, "13535.99527186596075269702356554648990339", "13535", "At 40 digits the "
                    "power is 13535.9953, just below 13536, so the greatest integer less than it is 13535."), floor21),
        (web_trace(opec, "1. Find how many countries are members of OPEC.", [
            ("OPEC member countries", "1. [OPEC](corpus://org/opec): The Organization of the Petroleum Exporting "
             "Countries has 14 member countries.", "A search for OPEC's membership.", "OPEC has 14 members."),
        ], "14"), opec),
        (web_trace(reading, "1. Find who owns Reading F.C.", [
            ("Reading F.C. owner", "1. [Reading F.C.](corpus://club/reading): The club is owned by Dai Yongge.",
             "A search for the club's owner.", "Reading F.C. is owned by Dai Yongge."),
        ], "Dai Yongge"), reading),
        (no_tool_trace(cyrus), cyrus),
        (web_trace(danube, "1. Find the country of .hu and its capital.\n2. Find the river.", [
            (".hu top-level domain capital river", "1. [Hungary](corpus://country/HUN): .hu; capital Budapest, on "
             "the Danube.", "One search covers the chain.", "Budapest lies on the Danube."),
        ], "Danube"), danube),
        (web_trace(deadpool, "1. Find the release date.", [
            ("Deadpool 2 release date", "1. [Deadpool 2](corpus://film/deadpool2): released on May 18, 2018.",
             "A search for the sequel's date.", "Deadpool 2 was released on May 18, 2018."),
        ], "May 18, 2018"), deadpool),
    ]  # fmt: skip


FLOOR21 = (
    "from decimal import Decimal, getcontext\ngetcontext().prec = 40\n"
    "print((Decimal(7).sqrt() + Decimal(5).sqrt()) ** 6)"
)


def no_tool_trace(task: Task) -> Trace:
    """A run whose agents answered from the plan alone, without a tool call."""
    events = [
        event("plan", "1. Name the author of the earliest charter of human rights.", think="This is well known."),
        event("suggested_answer", "Cyrus", think="The Cyrus Cylinder is called the first charter of human rights."),
        check(3, "The Cyrus Cylinder is widely cited as the first declaration of human rights."),
        event("answer", "Cyrus", think=None),
    ]
    return Trace(trace_id=f"coa:{task.id}", task_id=task.id, variant="mas", domain="qa", question=task.question,
                 tools=["web_search"], events=events, final_answer="Cyrus")  # fmt: skip


ROLLOUTS = {  # closed-book completions as the passrate prompt gets them, by question line
    NOBEL: ["Wilhelm Conrad Röntgen won the first Nobel Prize in Physics in 1901.\n\n<answer>Wilhelm Conrad Röntgen"
            "</answer>"] * 8,
    "1-2+3-4+5": ["Pairing terms gives 50 pairs of -1.\n\n\\boxed{-50}"] * 2,
    "10x^3-\\frac{1}{2x^2}": ["k = 3 gives 10 * 100 * (-1/8).\n\n\\boxed{-125}"] * 3
    + ["k = 3 gives 10 * 100 * (1/8).\n\n\\boxed{125}"] * 3 + ["k = 2 gives the x^0 term.\n\n\\boxed{-1250}"] * 2,
}  # fmt: skip


def write_rollouts(store, tasks: list[Task]) -> None:
    writer = RolloutWriter(store)
    for task in tasks:
        completions = next((texts for line, texts in ROLLOUTS.items() if line in task.question), [])
        for index, completion in enumerate(completions):
            verdict = default_checker(task).check(Policy.parse(completion, task.domain), task)
            writer.add({"task_id": task.id, "model": CLOSED_BOOK, "sample_index": index, "completion": completion,
                        "answer": Policy.parse(completion, task.domain), "correct": verdict.correct,
                        "score": verdict.score, "detail": verdict.detail, "request_hash": None,
                        "created_at": utcnow()})  # fmt: skip
    writer.flush()


def coa_run(run_dir: Path) -> dict[str, Task]:
    """The run folder described above; returns the tasks by id."""
    qa, math = write_task_files(run_dir.parent)
    config = FactoryConfig(run_dir=run_dir, coa={"tasks": str(qa)}, passrate={"tasks": str(math)})
    tasks = {task.id: task for path in (qa, math) for task in load_tasks(path)}
    with open_run(run_dir, "coa", config) as run:
        for trace, task in traces(tasks):
            asyncio.run(record_trace(run.store, trace, task, default_checker(task)))
        write_rollouts(run.store, list(tasks.values()))
    return tasks
