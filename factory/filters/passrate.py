"""pass_rate: keep the queries a policy model still finds hard (RL data).

A task's pass rate is the share of its judged rollouts (`rollouts.correct` not
NULL; a failed request has NULL and does not count) that are correct, for the
policy model labelled `model`. A trajectory is kept when its task has at least
`min_samples` judged rollouts and min_pass_rate <= pass rate <= max_pass_rate;
a code task whose rollouts all pass is dropped whatever the threshold. A group
whose rollouts all score the same (all right or all wrong) carries no
group-relative signal: it is named in the reason (or dropped with drop_uniform).

With `tasks` and `policy` the filter first samples the missing rollouts through
factory.passrate.ensure_rollouts; otherwise it uses the rollouts already stored.
"""

from __future__ import annotations

from typing import Any

from ..config import validate_config
from ..store import Store
from .config import PassRateFilter
from .sql import RowRule, quote


def passrate_rule(spec: PassRateFilter) -> RowRule:
    rates = f"""LEFT JOIN (
        SELECT task_id, count(correct) AS n, count(*) FILTER (WHERE correct) AS n_ok,
               count(DISTINCT coalesce(score, correct::INTEGER)) FILTER (WHERE correct IS NOT NULL) AS n_scores
        FROM rollouts WHERE model = {quote(spec.label())} GROUP BY task_id
    ) r ON r.task_id = t.task_id
    LEFT JOIN coa_traces c ON c.trace_id = t.trace_id"""
    domains = ", ".join(quote(d) for d in spec.drop_all_correct_domains) or "NULL"
    rate, counts = "(r.n_ok / r.n)", "' (' || r.n_ok || '/' || r.n || ')'"
    too_few = f"coalesce(r.n, 0) < {spec.min_samples}"
    uniform = "r.n_scores = 1"
    all_same = (
        "'uniform group: all ' || r.n || ' rollouts ' || CASE WHEN r.n_ok = r.n THEN 'correct' "
        "WHEN r.n_ok = 0 THEN 'wrong' ELSE 'scored alike' END"
    )
    missing = f"'too few rollouts: ' || coalesce(r.n, 0) || ' < {spec.min_samples} for model ' || {quote(spec.label())}"
    keep = f"""CASE WHEN {too_few} THEN {str(spec.missing == "keep").lower()}
        WHEN c.domain IN ({domains}) AND r.n_ok = r.n THEN false
        WHEN {rate} > {spec.max_pass_rate} OR {rate} < {spec.min_pass_rate} THEN false
        WHEN {uniform} THEN {str(not spec.drop_uniform).lower()}
        ELSE true END"""
    reason = f"""CASE WHEN {too_few} THEN {missing}
        WHEN c.domain IN ({domains}) AND r.n_ok = r.n
            THEN 'all rollouts correct: ' || r.n || ' of ' || r.n || ' (' || c.domain || ')'
        WHEN {rate} > {spec.max_pass_rate}
            THEN 'pass rate too high: ' || round({rate}, 3) || ' > {spec.max_pass_rate}' || {counts}
        WHEN {rate} < {spec.min_pass_rate}
            THEN 'pass rate too low: ' || round({rate}, 3) || ' < {spec.min_pass_rate}' || {counts}
        WHEN {uniform} THEN {all_same} END"""
    note = (
        f"CASE WHEN {too_few} THEN {missing} WHEN {uniform} THEN {all_same} "
        f"ELSE 'pass rate: ' || round({rate}, 3) || {counts} END"
    )
    return RowRule(keep=keep, reason=reason, note=note, joins=rates)


def sample_rollouts(store: Store, spec: PassRateFilter, source: str) -> dict[str, Any] | None:
    """Sample the rollouts the filter needs (only with `tasks` and `policy`); the summary, or None."""
    if spec.tasks is None or spec.policy is None:
        return None
    from ..llm import LLMConfig
    from ..passrate import ensure_rollouts  # another stage's package: imported only when sampling is asked for

    llm_config = validate_config(LLMConfig, spec.policy, f"{source}: filter '{spec.name}' policy")
    return ensure_rollouts(
        store, spec.tasks, llm_config, n=spec.samples, model_label=spec.label(), concurrency=spec.concurrency
    )
