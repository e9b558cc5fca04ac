"""Sample trajectories for the report: a few kept and a few dropped or failed, picked by a seeded hash.

What trains is not decided here. A row goes through the export's own format SQL (`messages` rows for
turns, `afm` rows for a completion) and `factory.mask.rows.row_messages`, the first step of
`factory.mask.render`: its `trains` flag and `observation_spans` are what the page marks. Texts are cut here,
before any HTML is written, so each sample stays a few KB however long the trajectory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ..coa.afm.blocks import parse_blocks
from ..errors import FactoryError
from ..export.formats import afm_sql, messages_sql
from ..export.options import ExportOptions
from ..export.selection import COLUMNS, selection_sql
from ..filters.sql import quote
from ..mask.rows import row_messages
from ..refine.world import format_action
from ..store import Store

PER_SIDE = 3  # kept samples, and dropped ones: at most 6 on the page
SEED = "report"
HEAD_TURNS, TAIL_TURNS = 8, 4  # a longer trajectory shows its first and last turns
TURN_CHARS = 900  # of one turn's text
AFM_CHARS = 8000  # of an AFM completion
PROMPT_CHARS = 900


@dataclass(frozen=True)
class ShownTurn:
    role: str
    text: str
    cut: int  # characters left out of `text`
    trains: bool  # factory.mask.rows' verdict (only an assistant turn can train)
    error: str | None = None  # mistake type (refine)
    feedback: str | None = None  # the DM's feedback on the mistake
    played: bool = False  # from a failed row's played steps or trace: never exported, so nothing of it trains
    label: str | None = None  # who said it, when not a chat role (a coa trace's agent and event kind)


@dataclass(frozen=True)
class Segment:
    text: str
    tag: str | None  # the AFM block it lies in
    trains: bool  # False inside an observation span


@dataclass
class Sample:
    trajectory_id: str
    source: str
    kept: bool
    reason: str | None  # why it was dropped or failed
    facts: str
    turns: list[ShownTurn] = field(default_factory=list)
    hidden_turns: int = 0  # turns left out between the head and the tail
    prompt: str | None = None  # AFM rows: the instruction (cut) ...
    segments: list[Segment] = field(default_factory=list)  # ... and the completion as tagged segments
    cut: int = 0  # characters of the completion left out
    note: str | None = None  # why the text cannot be shown


def samples(store: Store, options: ExportOptions, seed: str = SEED, per_side: int = PER_SIDE) -> dict[str, Any]:
    """{"kept": [Sample], "dropped": [Sample]}: kept rows are the export's selection, the rest are dropped."""
    selection = selection_sql(options)
    kept = store.query(kept_sql(selection, int(per_side)), [seed])
    dropped = store.query(dropped_sql(selection, int(per_side)), [seed])
    chosen = [(row[0], True, None) for row in kept] + [(row[0], False, row[1]) for row in dropped]
    shown = load_samples(store, chosen)
    return {"kept": [s for s in shown if s.kept], "dropped": [s for s in shown if not s.kept], "seed": seed}


def kept_sql(selection: str, limit: int) -> str:
    """Kept rows, one per source first (a run of both paths shows both)."""
    return f"""
        WITH k AS (SELECT DISTINCT trajectory_id, source, md5(? || trajectory_id) AS draw FROM ({selection})),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY source ORDER BY draw) AS nth FROM k)
        SELECT trajectory_id FROM ranked ORDER BY nth, draw LIMIT {limit}"""


def dropped_sql(selection: str, limit: int) -> str:
    """Rows not in the selection, with why; one per kind of reason first, so the page shows different ones."""
    return f"""
        WITH d AS (
            SELECT t.trajectory_id,
                   CASE WHEN t.verified THEN 'dropped by ' || coalesce(array_to_string(c.dropped_by, ', '), '?')
                        || ': ' || coalesce(array_to_string(c.drop_reasons, '; '), 'no reason recorded')
                        ELSE 'not verified: ' || coalesce(t.reason, t.rule, 'no reason recorded') END AS reason,
                   CASE WHEN t.verified THEN coalesce(c.dropped_by[1], '?') ELSE coalesce(t.rule, 'unverified') END
                       AS kind,
                   t.turns IS NULL AND t.completion IS NULL AS textless, md5(? || t.trajectory_id) AS draw
            FROM trajectories t LEFT JOIN curation c USING (trajectory_id)
            WHERE t.trajectory_id NOT IN (SELECT trajectory_id FROM ({selection}))),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY kind ORDER BY textless, draw) AS nth FROM d)
        SELECT trajectory_id, reason FROM ranked ORDER BY nth, textless, draw LIMIT {limit}"""


def load_samples(store: Store, chosen: list[tuple[str, bool, str | None]]) -> list[Sample]:
    out = []
    for trajectory_id, kept, reason in chosen:
        (row,) = store.query(
            "SELECT trajectory_id, source, turns, completion, task_id, final_answer, correct, n_turns, n_errors, "
            "n_corrections, steps, trace_id FROM trajectories WHERE trajectory_id = ?",
            [trajectory_id],
        )
        sample = Sample(trajectory_id, row[1], kept, reason, facts_line(row[:10]))
        try:
            add_text(store, sample, row[2], row[10], row[11])
        except (FactoryError, ValueError, duckdb.Error) as exc:  # a malformed stored row is shown as such
            sample.note = f"cannot show this row: {str(exc).splitlines()[0]}"
        out.append(sample)
    return out


def add_text(store: Store, sample: Sample, stored_turns: str | None, steps: str | None, trace_id: str | None) -> None:
    """The row as the export would write it (metadata aside), so its training flags are the export's."""
    row_sql = (
        f"SELECT {COLUMNS}, 1.0 AS weight, NULL AS split FROM trajectories t "
        f"WHERE t.trajectory_id = {quote(sample.trajectory_id)}"
    )
    afm = store.query(f"SELECT instruction, output, to_json(observation_spans) FROM ({afm_sql(row_sql)})")
    if afm:
        add_afm(sample, *afm[0])
        return
    messages = store.query(f"SELECT to_json(messages) FROM ({messages_sql(row_sql)})")
    if messages:
        add_turns(sample, json.loads(stored_turns), json.loads(messages[0][0]))
    elif steps:
        add_played_steps(sample, json.loads(steps))
    elif trace_id and (trace := store.query("SELECT question, events FROM coa_traces WHERE trace_id = ?", [trace_id])):
        add_trace_events(sample, trace[0][0] or "", json.loads(trace[0][1] or "[]"))
    else:
        sample.note = "no turns or completion recorded"


def facts_line(row: tuple) -> str:
    _, source, _, _, task_id, answer, correct, n_turns, n_errors, n_corrections = row
    if source == "refine":
        if n_turns is None:
            return "refine · no turns stored (the row failed before its turns were written)"
        return f"refine · turns {n_turns} · mistakes {n_errors or 0} · corrections {n_corrections or 0}"
    check = {True: "correct", False: "wrong"}.get(correct, "not checked")
    said = f"answer {cut_text(answer, 120)[0]!r} ({check})" if answer else "no answer"
    return f"{source} · task {task_id} · {said}"


def cut_text(text: str, limit: int) -> tuple[str, int]:
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def add_turns(sample: Sample, stored: list[dict], exported: list[dict]) -> None:
    """Stored turns (mistake type and feedback) beside render's per-turn verdict on the exported message."""
    verdicts = row_messages({"id": sample.trajectory_id, "messages": exported})
    if len(verdicts) != len(stored):
        raise FactoryError(f"{len(stored)} stored turns but {len(verdicts)} exported messages")
    shown = list(range(len(stored)))
    if len(shown) > HEAD_TURNS + TAIL_TURNS:
        sample.hidden_turns = len(shown) - HEAD_TURNS - TAIL_TURNS
        shown = shown[:HEAD_TURNS] + shown[-TAIL_TURNS:]
    for i in shown:
        error = stored[i].get("error") or {}
        text, cut = cut_text(verdicts[i].content, TURN_CHARS)
        sample.turns.append(
            ShownTurn(verdicts[i].role, text, cut, verdicts[i].trains, error.get("type"), error.get("feedback"))
        )


def add_played_steps(sample: Sample, steps: list[dict]) -> None:
    """A refine row that failed verification keeps only its played steps: shown as the turns they were."""
    shown = list(range(len(steps)))
    if len(shown) > (HEAD_TURNS + TAIL_TURNS) // 2:  # two turns a step
        sample.hidden_turns = 2 * (len(shown) - (HEAD_TURNS + TAIL_TURNS) // 2)
        shown = shown[: HEAD_TURNS // 2] + shown[-(TAIL_TURNS // 2) :]
    for i in shown:
        step = steps[i]
        action = step.get("action") or {}
        error = (step.get("evaluation") or {}).get("error")
        observation = str(step.get("observation") or "")
        call = format_action(str(action.get("name")), action.get("params") or {})
        said = f"Thought: {step.get('thought')}\nAction: {call}"
        sample.turns.append(
            ShownTurn(
                "assistant", *cut_text(said, TURN_CHARS), False, error, observation if error else None, played=True
            )
        )
        sample.turns.append(ShownTurn("user", *cut_text(f"Observation: {observation}", TURN_CHARS), False, played=True))


def add_trace_events(sample: Sample, question: str, events: list[dict]) -> None:
    """A coa/import row that never became a trajectory: its question and the trace's events, in order."""
    sample.turns.append(ShownTurn("user", *cut_text(question, TURN_CHARS), False, played=True, label="question"))
    shown = list(range(len(events)))
    if len(shown) > HEAD_TURNS + TAIL_TURNS:
        sample.hidden_turns = len(shown) - HEAD_TURNS - TAIL_TURNS
        shown = shown[:HEAD_TURNS] + shown[-TAIL_TURNS:]
    for i in shown:
        event = events[i]
        kind = str(event.get("kind"))
        error = "run" if kind == "error" else ("tool" if (event.get("tool") or {}).get("ok") is False else None)
        label = f"{event.get('agent')} · {kind.replace('_', ' ')}"
        sample.turns.append(
            ShownTurn("assistant", *cut_text(event_text(event), TURN_CHARS), False, error, played=True, label=label)
        )


def event_text(event: dict) -> str:
    """What a trace event says, as the distillation would read it: thought, content, tool call and result."""
    parts = [f"think: {event['think']}"] if event.get("think") else []
    if event.get("content"):
        parts.append(str(event["content"]))
    tool = event.get("tool")
    if tool:
        parts.append(f"{tool.get('name')}: {tool.get('argument')}\n→ {tool.get('result')}")
    if event.get("scores"):
        parts.append("scores: " + ", ".join(f"{k} {v}" for k, v in event["scores"].items()))
    return "\n".join(parts)


def add_afm(sample: Sample, instruction: str, output: str, spans: str | None) -> None:
    """The completion cut into segments by AFM block and by render's observation spans."""
    row = {"id": sample.trajectory_id, "instruction": instruction, "output": output,
           "observation_spans": None if spans is None else json.loads(spans)}  # fmt: skip
    reply = row_messages(row)[-1]
    sample.prompt = cut_text(instruction, PROMPT_CHARS)[0]
    shown, sample.cut = cut_text(output, AFM_CHARS)
    sample.segments = segments(
        shown,
        [(b.start, b.end, b.tag) for b in parse_blocks(output)],
        reply.observation_spans if reply.trains else ((0, len(output)),),
    )


def segments(text: str, blocks: list[tuple[int, int, str]], untrained: tuple[tuple[int, int], ...]) -> list[Segment]:
    """`text` split wherever a block or an untrained span starts or ends."""
    cuts = {0, len(text)} | {min(x, len(text)) for start, end, _ in blocks for x in (start, end)}
    cuts |= {min(x, len(text)) for span in untrained for x in span}
    edges = sorted(cuts)
    out = []
    for start, end in zip(edges, edges[1:]):
        tag = next((name for b_start, b_end, name in blocks if b_start <= start and end <= b_end), None)
        trains = not any(s <= start and end <= e for s, e in untrained)
        out.append(Segment(text[start:end], tag, trains))
    return out
