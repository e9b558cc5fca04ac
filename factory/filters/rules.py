"""The row-at-a-time built-ins as SQL expressions (see docs/filters.md for each one's idea).

Both paths are judged by the same rule where their stats mean the same thing:
a refine trajectory's tool interactions are its assistant turns (each one is an
action the environment answers), a coa trajectory's are its tool calls.
"""

from __future__ import annotations

from .config import (
    ComplexityFilter,
    CorrectnessFilter,
    GroundedFilter,
    GroundedThoughtsFilter,
    ReflectionFilter,
    SplitFilter,
    SqlFilter,
    UpsampleFilter,
)
from .sql import RowRule, quote, stat

TOOL_INTERACTIONS = f"coalesce({stat('tool_calls')}, {stat('assistant_turns')})"
TURNS = f"coalesce(t.n_turns, {stat('turns')})"


def complexity_rule(spec: ComplexityFilter) -> RowRule:
    checks, reasons = [], []
    if spec.min_tool_calls is not None:
        tools = f"coalesce({TOOL_INTERACTIONS}, 0)"
        checks.append(f"{tools} >= {spec.min_tool_calls}")
        reasons.append(
            f"WHEN {tools} < {spec.min_tool_calls} THEN 'too few tool calls: ' || {tools} || ' < {spec.min_tool_calls}'"
        )
    if spec.min_turns is not None:
        turns = f"coalesce({TURNS}, 0)"
        checks.append(f"{turns} >= {spec.min_turns}")
        reasons.append(f"WHEN {turns} < {spec.min_turns} THEN 'too few turns: ' || {turns} || ' < {spec.min_turns}'")
    return RowRule(keep=" AND ".join(checks) or "true", reason=f"CASE {' '.join(reasons)} END" if reasons else "NULL")


def reflection_rule(spec: ReflectionFilter) -> RowRule:
    replans = f" + coalesce({stat('replans')}, 0)" if spec.count_replans else ""
    reflections = f"(coalesce({stat('reflections')}, 0){replans})"
    corrections = f"coalesce(t.n_corrections, {stat('corrections')}, 0)"
    what = "reflections or replans" if spec.count_replans else "reflections"
    return RowRule(
        keep=f"CASE WHEN t.source = 'refine' THEN {corrections} >= {spec.min_corrections} "
        f"ELSE {reflections} >= {spec.min_reflections} END",
        reason=f"CASE WHEN t.source = 'refine' "
        f"THEN 'too few corrections: ' || {corrections} || ' < {spec.min_corrections}' "
        f"ELSE 'too few reflections: ' || {reflections} || ' {what} < {spec.min_reflections}' END",
    )


def correctness_rule(spec: CorrectnessFilter) -> RowRule:
    columns = [f"t.{name}" for name in spec.require]
    failed = " OR ".join(f"{c} = false" for c in columns)
    unknown = " OR ".join(f"{c} IS NULL" for c in columns)
    reasons = []
    if "verified" in spec.require:
        reasons.append(
            "WHEN t.verified = false THEN 'not verified: ' || coalesce(t.rule, t.reason, 'no reason recorded')"
        )
    if "correct" in spec.require:
        reasons.append("WHEN t.correct = false THEN 'incorrect: ' || coalesce(t.check_detail, 'wrong answer')")
    unknown_reason = " ".join(f"WHEN {c} IS NULL THEN 'correctness unknown: {c[2:]} is NULL'" for c in columns)
    return RowRule(
        keep=f"CASE WHEN {failed} THEN false WHEN {unknown} THEN {str(spec.unknown_passes).lower()} ELSE true END",
        reason=f"CASE {' '.join(reasons)} {unknown_reason} END",
        note=f"CASE {unknown_reason} END",
    )


def grounded_rule(spec: GroundedFilter) -> RowRule:
    """The share of answer-bearing claims an observation supports (stats the coa run records).

    A row without a claim has nothing ungrounded and is kept; a row written before the run recorded
    claims is judged by `unknown_passes`. The reason counts the ungrounded claims and quotes the first.
    """
    claims, grounded = stat("claims"), stat("grounded_claims")
    unknown = f"{claims} IS NULL OR {grounded} IS NULL"
    share = f"{grounded} >= {spec.min_share} * {claims} - 1e-9"  # min_share 1.0: every claim
    first = "left(json_extract_string(t.stats_json, '$.ungrounded_claims[0]'), 80)"
    ungrounded = (
        f"'ungrounded claims: ' || ({claims} - {grounded}) || ' of ' || {claims}"
        f" || coalesce(' (''' || {first} || ''')', '')"
    )
    # A recalled answer is judged first: grounding its claims afterwards does not make it found.
    before = "false" if spec.allow_answer_before_tool else f"coalesce({stat('answer_before_tool', 'BOOLEAN')}, false)"
    unknown_reason = "'grounding unknown: no claims recorded'"
    return RowRule(
        keep=f"CASE WHEN {before} THEN false WHEN {unknown} THEN {str(spec.unknown_passes).lower()} "
        f"WHEN {claims} = 0 THEN true ELSE {share} END",
        reason=f"CASE WHEN {before} THEN 'answer before tool: the final answer was written before the first "
        f"observation' WHEN {unknown} THEN {unknown_reason} ELSE {ungrounded} END",
        note=f"CASE WHEN {unknown} THEN {unknown_reason} END",
    )


def grounded_thoughts_rule(spec: GroundedThoughtsFilter) -> RowRule:
    """A refine row's trained thoughts that assert a world state no observation and no replayed state supports
    (stats the refine run records, refine/grounded_thoughts.py); the reason counts them and quotes the first."""
    ungrounded = stat("ungrounded_thoughts")
    first = "left(json_extract_string(t.stats_json, '$.ungrounded_thought'), 160)"
    unknown_reason = "'grounding unknown: no thought check recorded'"
    return RowRule(
        keep=f"CASE WHEN {ungrounded} IS NULL THEN {str(spec.unknown_passes).lower()} "
        f"ELSE {ungrounded} <= {spec.max_ungrounded} END",
        reason=f"CASE WHEN {ungrounded} IS NULL THEN {unknown_reason} ELSE 'ungrounded thoughts: ' || {ungrounded}"
        f" || coalesce(' (' || {first} || ')', '') END",
        note=f"CASE WHEN {ungrounded} IS NULL THEN {unknown_reason} END",
    )


# A refine row's assistant turns as one mark each, 'x' a mistake and '.' a move the DM accepted: '.x..xx.'.
TURNS_SHAPE = '[{"role": "VARCHAR", "error": {"type": "VARCHAR"}}]'
MISTAKE_MARKS = (
    "CASE WHEN t.source = 'refine' THEN array_to_string([CASE WHEN x.error.type IS NULL THEN '.' ELSE 'x' END "
    f"FOR x IN coalesce(try(from_json(t.turns, '{TURNS_SHAPE}')), []) IF x.role = 'assistant'], '') END"
)
LONGEST_RUN = "coalesce(list_max([length(run) FOR run IN regexp_extract_all(t.mistake_marks, 'x+')]), 0)"
FIRST_MISTAKE = "strpos(t.mistake_marks, 'x')"  # 1-based assistant turn, 0: none


def recovery_whens(spec: UpsampleFilter) -> list[tuple[str, str]]:
    """The `recovery` trigger: a fix that took several tries, or a first mistake late in the row."""
    whens = []
    if spec.min_mistake_run is not None:
        whens.append((f"{LONGEST_RUN} >= {spec.min_mistake_run}",
                      f"'upsampled: ' || {LONGEST_RUN} || ' mistakes in a row before the fix'"))  # fmt: skip
    if spec.late_first_mistake is not None:
        whens.append((f"{FIRST_MISTAKE} >= {spec.late_first_mistake}",
                      f"'upsampled: first mistake late, at assistant turn ' || {FIRST_MISTAKE}"))  # fmt: skip
    return [(f"t.source = 'refine' AND {cond}", text) for cond, text in whens]


def upsample_rule(spec: UpsampleFilter) -> RowRule:
    """Always keeps; the trajectories that recovered weigh more (the AFM paper upsamples them)."""
    whens = []
    if "low_double_check" in spec.triggers:
        low = f"coalesce({stat('low_double_check_corrected', 'BOOLEAN')}, false)"
        whens.append((low, "'upsampled: recovered from a low double-check score'"))
    if "corrections" in spec.triggers:
        # refine only: there n_corrections counts fixed mistakes; on coa rows it holds re-plans.
        fixed = f"t.source = 'refine' AND coalesce(t.n_corrections, 0) >= {spec.min_corrections}"
        whens.append((fixed, "'upsampled: recovered from ' || t.n_corrections || ' mistake(s)'"))
    recovery = "recovery" in spec.triggers
    if recovery:
        whens += recovery_whens(spec)
    weight = " ".join(f"WHEN {cond} THEN {spec.weight}" for cond, _ in whens)
    note = " ".join(f"WHEN {cond} THEN {text}" for cond, text in whens)
    return RowRule(keep="true", reason="NULL", note=f"CASE {note} END", weight=f"CASE {weight} ELSE 1.0 END",
                   lets={"mistake_marks": MISTAKE_MARKS} if recovery else {})  # fmt: skip


SPLIT_SCALE = 1_000_000


def md5_mod(text: str, modulus: int) -> str:
    """md5_number(text) % modulus, from the two 64-bit halves of the 128-bit md5.

    The same number as the plain `%`, which on DuckDB's UHUGEINT costs ~2.5 us a row (18x the md5
    itself): x = hi * 2^64 + lo, so x mod m = ((hi mod m) * (2^64 mod m) + lo mod m) mod m, all in UBIGINT.
    """
    assert 0 < modulus < 2**31  # keeps (hi mod m) * (2^64 mod m) inside 64 bits
    md5 = f"md5_number({text})"
    high, low = f"({md5} >> 64)::UBIGINT", f"({md5} & {2**64 - 1})::UBIGINT"
    return f"((({high} % {modulus}) * {2**64 % modulus} + {low} % {modulus}) % {modulus})"


def split_rule(spec: SplitFilter) -> RowRule:
    """A split from an md5 of the group key: the same key always lands in the same split.

    The key falls back along `keys` (task, then persona, then script), ending at
    the trajectory id, so every trajectory of one query shares one split. md5
    rather than DuckDB's hash(): the assignment must not change with the engine version.
    """
    key = f"coalesce({', '.join(f't.{k}' for k in spec.keys)}, t.trajectory_id)"
    point = f"{md5_mod(f'{quote(spec.salt)} || {key}', SPLIT_SCALE)} / {SPLIT_SCALE}.0"
    whens, upto = [], 0.0
    names = list(spec.splits)
    for name in names[:-1]:
        upto += spec.splits[name]
        whens.append(f"WHEN t.split_point < {upto!r} THEN {quote(name)}")
    # One split has no WHEN (`CASE ELSE x END` is not SQL): every row simply gets its name.
    split = f"CASE {' '.join(whens)} ELSE {quote(names[-1])} END" if whens else quote(names[-1])
    return RowRule(keep="true", reason="NULL", split=split, lets={"split_point": point})


def sql_rule(spec: SqlFilter) -> RowRule:
    return RowRule(keep=f"(\n{spec.sql}\n)", reason=quote(spec.reason or f"failed {spec.name}"))
