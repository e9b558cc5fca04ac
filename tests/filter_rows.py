"""Shared rows and helpers for the filter tests: a real DuckDB store with hand-made trajectories of both paths."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from factory.coa.tools import tool_tags
from factory.store import Store
from factory.store.derived import upsert_trajectory

T0 = datetime(2025, 1, 1, 12, 0, 0)


def afm(*tools: tuple[str, str]) -> str:
    """An AFM completion with one think + tool + observation per (tag, input)."""
    parts = ["<plan>look it up</plan>"]
    for tag, text in tools:
        parts += ["<think>next</think>", f"<{tag}>{text}</{tag}>", "<observation>result</observation>"]
    return "\n".join(parts + ["<think>done</think>", "<answer>x</answer>"])


def refine_turns(*actions: str) -> str:
    turns = [{"role": "user", "content": "You are in a house.", "loss": False, "kind": "observation", "error": None}]
    for action in actions:
        turns.append(
            {
                "role": "assistant",
                "content": f"Thought: try\nAction: {action}",
                "loss": True,
                "kind": "thought_action",
                "error": None,
            }
        )
        turns.append(
            {"role": "user", "content": "Observation: ok", "loss": False, "kind": "observation", "error": None}
        )
    return json.dumps(turns)


def coa_stats(tool_calls: int, reflections: int = 0, replans: int = 0, low_corrected: bool = False) -> str:
    return json.dumps(
        {
            "tool_calls": tool_calls,
            "reflections": reflections,
            "replans": replans,
            "low_double_check_corrected": low_corrected,
            "double_check_scores": [2, 4],
        }
    )


def add_coa(
    store: Store, tid: str, question: str, minutes: int, *, source: str = "coa", domain: str = "qa", **row
) -> None:
    trace_id = tid
    task_id = row.pop("task_id", "task-" + tid.split(":")[1])
    store.upsert(
        "coa_traces",
        {
            "trace_id": trace_id,
            "task_id": task_id,
            "source": "mas" if source == "coa" else "import:openai",
            "variant": "mas",
            "domain": domain,
            "question": question,
            "status": "answered",
            "created_at": T0,
        },
    )
    values = {
        "trajectory_id": tid,
        "source": source,
        "trace_id": trace_id,
        "task_id": task_id,
        "variant": "mas",
        "verified": True,
        "created_at": T0 + timedelta(minutes=minutes),
    }
    values.update(row)
    upsert_trajectory(store, values, tool_tags())  # as the coa writer does: tool inputs stored with the row


def add_refine(store: Store, persona: str, task: str, minutes: int, **row) -> None:
    script_id = f"script:{persona}"
    store.upsert(
        "scripts",
        {
            "script_id": script_id,
            "persona_id": persona,
            "attempt": 0,
            "script": json.dumps({"task": task, "actions": []}),
            "verified": True,
        },
    )
    values = {
        "trajectory_id": f"refine:{persona}",
        "source": "refine",
        "persona_id": persona,
        "script_id": script_id,
        "verified": True,
        "created_at": T0 + timedelta(minutes=minutes),
    }
    values.update(row)
    upsert_trajectory(store, values)  # as the writers do: tool inputs stored with the row


def seed_run(tmp_path: Path) -> Path:
    """Four coa rows, one import row and three refine rows, judged by every filter test that takes `run_dir`."""
    with Store.open(tmp_path) as store:
        add_coa(
            store,
            "coa:q1",
            "What is the capital of France?",
            1,
            correct=True,
            stats=coa_stats(6, reflections=1, low_corrected=True),
            n_turns=14,
            n_corrections=0,
            completion=afm(*[("web_search", f"france fact {i}") for i in range(6)]),
        )
        add_coa(
            store,
            "coa:q2",
            "what is the capital of  FRANCE",
            2,
            correct=False,
            check_detail="em=0 'lyon'",
            stats=coa_stats(3),
            n_turns=8,
            completion=afm(("web_search", "france"), ("crawl_page", "u1"), ("web_search", "capital")),
        )
        add_coa(
            store,
            "coa:q3",
            "Which river flows through the city of Vienna and into the Black Sea",
            3,
            correct=None,
            stats=coa_stats(5, replans=1),
            n_turns=12,
            completion=afm(
                ("web_search", "Danube river"),
                ("web_search", "danube  RIVER!"),
                ("web_search", "vienna"),
                ("web_search", "black sea"),
                ("crawl_page", "u2"),
            ),
        )
        add_coa(
            store,
            "coa:q4",
            "Which river flows through the city of Vienna and then into the Black Sea",
            4,
            verified=False,
            rule="unclosed_tag",
            reason="grammar unclosed_tag: <think> never closed",
            stats=coa_stats(2),
        )
        add_coa(
            store,
            "import:x1",
            "Compute the sum of the first 100 primes",
            5,
            source="import",
            correct=True,
            stats=coa_stats(8, reflections=2),
            n_turns=18,
            completion=afm(
                ("code", "total = sum(primes(100))\nprint(total)"),
                ("code", "total = sum(primes(100))\nprint(total, 1)"),
                *[("code", f"step_{i}()") for i in range(6)],
            ),
        )
        add_refine(
            store,
            "p1",
            "Bake a cake for the village fair",
            6,
            n_turns=9,
            n_corrections=2,
            stats=json.dumps({"turns": 9, "assistant_turns": 4, "corrections": 2}),
            turns=refine_turns("go(kitchen)", "take(flour)", "mix(flour)", "bake(cake)"),
        )
        add_refine(
            store,
            "p2",
            "Find the lost key in the garden shed",
            7,
            n_turns=13,
            n_corrections=0,
            stats=json.dumps({"turns": 13, "assistant_turns": 6, "corrections": 0}),
            turns=refine_turns("go(garden)", "open(shed)", "go(garden)", "look()", "take(key)", "leave()"),
        )
        add_refine(
            store,
            "p3",
            "Repair the broken fence before the storm",
            8,
            verified=False,
            reason="budget: verifier kept failing",
            stats="not json",
        )
    return tmp_path


def write_config(tmp_path: Path, text: str, name: str = "filters.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def verdicts(run_dir: Path, name: str) -> dict[str, tuple]:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query(
            "SELECT trajectory_id, keep, reason, weight, split FROM filter_verdicts WHERE filter = ?", [name]
        )
    by_id = {row[0]: row[1:] for row in rows}
    assert len(by_id) == len(rows), f"filter {name} holds two verdicts for one trajectory"
    return by_id


ALL_BUILTINS = """
filters:
  - {name: complex, kind: complexity, min_tool_calls: 5}
  - {name: reflective, kind: reflection}
  - {name: correct, kind: correctness}
  - {name: no_repeats, kind: redundancy, similarity: 0.8}
  - {name: unique, kind: dedup, threshold: 0.7}
  - {name: upsample, kind: upsample, weight: 3}
  - {name: split, kind: split, splits: {sft: 0.5, rl: 0.5}}
  - {name: long_enough, sql: "n_turns >= 9", reason: "fewer than 9 turns"}
"""


def kept(run_dir: Path, name: str) -> set[str]:
    return {tid for tid, (keep, *_rest) in verdicts(run_dir, name).items() if keep}


def add_rollouts(store: Store, task_id: str, model: str, outcomes: list[bool | None], start: int = 0) -> None:
    store.insert_rows(
        "rollouts",
        {
            "task_id": [task_id] * len(outcomes),
            "model": [model] * len(outcomes),
            "sample_index": list(range(start, start + len(outcomes))),
            "completion": ["..."] * len(outcomes),
            "correct": outcomes,
            "score": [None if ok is None else float(ok) for ok in outcomes],
            "created_at": [datetime.now()] * len(outcomes),
        },
    )


def verdict_times(run_dir: Path) -> dict[tuple[str, str], datetime]:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query("SELECT filter, trajectory_id, created_at FROM filter_verdicts")
    stamps = {(f, tid): at for f, tid, at in rows}
    assert len(stamps) == len(rows), "a (filter, trajectory) pair holds two verdicts"
    return stamps
