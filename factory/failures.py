"""Why things failed, per stage, with counts and an example each (funnels, `factory run` and the report).

Reasons are grouped after normalising the names in them ("unknown location 'garden'" and
"unknown location 'attic'" are one reason), and every group keeps one raw example with its
id, so a user can go from a count to `factory show`. Sections:

- scripts: refine script attempts that failed verification (`scripts.problems`);
- verify: refine trajectory attempts the verifier failed, split into attempts whose row was
  lost and attempts recovered on a later try;
- traces: coa/import tasks that ended without a verified trajectory (run status, grammar
  rule), and answers the checker marked wrong;
- calls: LLM calls that ended in an error (by kind);
- filters: verified rows a filter dropped.

A generation path's funnel, the line before its failures, is `funnel_line`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .store import Store

TOP = 5
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
NUMBER = re.compile(r"\b\d+(\.\d+)?\b")
# Which LLM call stages belong to which generation path (refine's roles name theirs script/trajectory).
CALL_STAGES = {"refine": "stage IN ('script', 'trajectory')", "coa": "stage LIKE 'coa%'"}
ENDED_EARLY = "status NOT IN ('answered', 'imported')"  # a coa run's status when it ended without an answer
SECTIONS_OF = {"refine": ("scripts", "verify", "calls"), "coa": ("traces", "calls"), "filter": ("filters",)}


@dataclass
class Reason:
    text: str  # normalised: what groups
    count: int
    example_id: str
    example: str  # one raw instance


@dataclass
class Section:
    name: str
    title: str
    failed: int  # items that failed (attempts, tasks, calls, rows)
    reasons: list[Reason] = field(default_factory=list)
    note: str = ""


def normalise(text: str) -> str:
    return NUMBER.sub("N", QUOTED.sub("'…'", " ".join(str(text).split())))


def group(items: list[tuple[str, str]]) -> list[Reason]:
    """(id, reason) pairs → reasons by normalised text, most frequent first, one example each."""
    found: dict[str, Reason] = {}
    for item_id, text in items:
        key = normalise(text)
        if key in found:
            found[key].count += 1
        else:
            found[key] = Reason(key, 1, str(item_id), " ".join(str(text).split()))
    return sorted(found.values(), key=lambda r: (-r.count, r.text))


def has_table(store: Store, name: str) -> bool:
    return store.has_table(name)


def script_section(store: Store) -> Section:
    items = []
    rows = store.query("SELECT script_id, attempt, problems FROM scripts WHERE NOT verified ORDER BY 1, 2")
    for script_id, attempt, problems in rows:
        try:
            listed = json.loads(problems) if problems else []
        except ValueError:
            listed = [problems]
        for problem in (listed if isinstance(listed, list) else [listed]) or ["failed (no problem recorded)"]:
            items.append((f"{script_id} try {attempt}", problem))
    return Section("scripts", "script attempts that failed verification", len(rows), group(items))


def verify_section(store: Store) -> Section:
    rows = store.query("""
        SELECT v.trajectory_id, coalesce(v.rule, 'failed'), coalesce(v.reason, ''), coalesce(t.verified, false)
        FROM verdicts v LEFT JOIN trajectories t USING (trajectory_id) WHERE NOT v.ok ORDER BY 1, v.attempt""")
    lost = [(tid, f"{rule}: {why}" if why else rule) for tid, rule, why, verified in rows if not verified]
    recovered = sum(1 for *_, verified in rows if verified)
    note = f"{recovered} of them recovered on a later attempt (the row verified)" if recovered else ""
    section = Section("verify", "trajectory attempts the verifier failed", len(rows), note=note)
    section.reasons = group(lost) + group([(tid, f"recovered: {rule}: {why}" if why else f"recovered: {rule}")
                                           for tid, rule, why, verified in rows if verified])  # fmt: skip
    return section


def trace_section(store: Store) -> Section:
    """One item per task: a run that ended early (timeout, llm_error, ...) by its run status, else what broke
    its distillation or its answer (the run status's failure row in `trajectories` is the same task: not again)."""
    items = store.query(f"""
        SELECT trace_id, status || coalesce(': ' || nullif(reason, ''), '') FROM coa_traces
        WHERE {ENDED_EARLY} ORDER BY 1""")
    items += store.query(f"""
        SELECT trajectory_id, 'distillation ' || coalesce(rule, 'failed') || coalesce(': ' || nullif(reason, ''), '')
        FROM trajectories WHERE source <> 'refine' AND NOT verified
        AND trajectory_id NOT IN (SELECT trace_id FROM coa_traces WHERE {ENDED_EARLY}) ORDER BY 1""")
    items += store.query("""
        SELECT trajectory_id, 'answer checked wrong' FROM trajectories
        WHERE source <> 'refine' AND verified AND correct = false ORDER BY 1""")
    return Section("traces", "coa/import tasks without a correct verified trajectory", len(items), group(items))


def call_section(store: Store, path: str | None = None) -> Section:
    where = f" AND {CALL_STAGES[path]}" if path in CALL_STAGES else ""
    items = store.query(f"""
        SELECT request_hash[:12] || ' (' || stage || ')',
               error_kind || ': ' || coalesce(split_part(error, chr(10), 1), '')
        FROM llm_calls WHERE status <> 'ok' AND coalesce(error_kind, '') <> 'cancelled'{where} ORDER BY started_at""")
    # A call its caller cancelled (a task past its time limit) is that task's failure, recorded there: not counted twice.
    return Section("calls", "LLM calls that ended in an error", len(items), group(items))


def filter_section(store: Store) -> Section:
    items = store.query("""
        SELECT v.trajectory_id, v.filter || ': ' || coalesce(v.reason, 'dropped')
        FROM filter_verdicts v JOIN trajectories t USING (trajectory_id) WHERE NOT v.keep AND t.verified ORDER BY 1""")
    return Section(
        "filters", "verified rows dropped by a filter (a row may be dropped by several)", len(items), group(items)
    )


BUILDERS = {"scripts": (script_section, "scripts"), "verify": (verify_section, "verdicts"),
            "traces": (trace_section, "coa_traces"), "filters": (filter_section, "filter_verdicts")}  # fmt: skip


def failure_sections(store: Store, paths: list[str] | None = None) -> list[Section]:
    """The sections for these paths (refine, coa, filter; None: all), only where something failed."""
    names = [n for p in (paths or list(SECTIONS_OF)) for n in SECTIONS_OF.get(p, ())]
    sections = []
    for name in dict.fromkeys(names):
        if name == "calls":
            if has_table(store, "llm_calls"):
                sections.append(call_section(store, paths[0] if paths and len(paths) == 1 else None))
            continue
        build, table = BUILDERS[name]
        if has_table(store, table):
            sections.append(build(store))
    return [s for s in sections if s.failed]


def format_sections(sections: list[Section], top: int = TOP) -> str:
    if not sections:
        return "failures: none recorded"
    lines = []
    for section in sections:
        lines.append(f"failures, {section.title}: {section.failed}" + (f"; {section.note}" if section.note else ""))
        for reason in section.reasons[:top]:
            example = "" if reason.example == reason.text else f" — e.g. {reason.example[:100]}"
            lines.append(f"  {reason.count:>4} × {reason.text[:110]}  [{reason.example_id}]{example}")
        if len(section.reasons) > top:
            rest = sum(r.count for r in section.reasons[top:])
            lines.append(f"       … and {len(section.reasons) - top} more reasons ({rest} items)")
    return "\n".join(lines)


def format_failures(run: str | Path | Store, stages: list[str] | None = None, top: int = TOP) -> str:
    """Top failure reasons with counts for a run folder (or an open store), for the given paths."""
    if isinstance(run, Store):
        return format_sections(failure_sections(run, stages), top)
    with Store.open(run, read_only=True) as store:
        return format_sections(failure_sections(store, stages), top)


def funnel_line(funnel: dict[str, int]) -> str:
    return "funnel: " + " -> ".join(f"{name.replace('_', ' ')} {n}" for name, n in funnel.items())
