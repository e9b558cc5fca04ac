"""pass_rate: keep the queries a policy model still finds hard (RL data).

A task's pass rate is the share of its judged rollouts (`rollouts.correct` not
NULL; a failed request has NULL and does not count) that are correct, for the
policy model labelled `model`. A trajectory is kept when its task has at least
`min_samples` judged rollouts and min_pass_rate <= pass rate <= max_pass_rate;
a code task whose rollouts all pass is dropped whatever the threshold. A group
whose rollouts all score the same (all right or all wrong) carries no
group-relative signal: it is named in the reason (or dropped with drop_uniform).

The filter only reads `rollouts`: `factory passrate` (or the pipeline's passrate
stage) samples them. Before anything is written, `rollout_gaps` counts the tasks
the filter judges that lack rollouts: none sampled at all for the label (or any
lacking, with `missing: fail`) stops the run with the command that samples them;
otherwise those rows are dropped or kept per `missing` and the funnel names the command.
"""

from __future__ import annotations

import shlex

from ..errors import FactoryError
from ..store import Store
from ..tasks.recorded import recorded_task_files
from .config import PassRateFilter
from .sql import RowRule, quote, scoped_base


class MissingRollouts(FactoryError):
    """A pass_rate filter has no rollouts to judge by; the message names the command that samples them."""


def passrate_rule(spec: PassRateFilter) -> RowRule:
    rates = f"""LEFT JOIN (
        SELECT task_id, count(correct) AS n, count(*) FILTER (WHERE correct) AS n_ok,
               count(DISTINCT coalesce(score, correct::INTEGER)) FILTER (WHERE correct IS NOT NULL) AS n_scores
        FROM rollouts WHERE model = {quote(spec.model)} GROUP BY task_id
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
    missing = f"'too few rollouts: ' || coalesce(r.n, 0) || ' < {spec.min_samples} for model ' || {quote(spec.model)}"
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


def rollout_gaps(store: Store, spec: PassRateFilter, source: str) -> str | None:
    """A funnel line when some tasks the filter judges lack `min_samples` judged rollouts, else None.

    Raises MissingRollouts when none of them has a judged rollout for the label (nothing sampled yet, or
    a mistyped label: judging would drop or keep every row on no evidence), or when any lacks them and
    `missing: fail`. Rows without a task_id cannot have rollouts and are not counted here.
    """
    tasks, short, sampled = store.query(f"""
        SELECT count(*), count(*) FILTER (WHERE coalesce(r.n, 0) < {spec.min_samples}), count(*) FILTER (WHERE r.n > 0)
        FROM (SELECT DISTINCT t.task_id FROM {scoped_base(spec)} t WHERE t.in_scope AND t.task_id IS NOT NULL) q
        LEFT JOIN (SELECT task_id, count(correct) AS n FROM rollouts WHERE model = {quote(spec.model)}
                   GROUP BY task_id) r USING (task_id)""")[0]
    if not short:
        return None
    lacking = f"{short} of {tasks} tasks have fewer than {spec.min_samples} judged rollouts for model '{spec.model}'"
    command = sampling_command(store, spec)
    if not sampled:
        raise MissingRollouts(
            f"{source}: filter '{spec.name}': no judged rollouts for model '{spec.model}' in this run "
            f"({stored_labels(store)}); sample them first: {command}"
        )
    if spec.missing == "fail":
        raise MissingRollouts(
            f"{source}: filter '{spec.name}': {lacking}; sample them first: {command} (or set missing: drop or keep)"
        )
    fate = "dropped" if spec.missing == "drop" else "kept"
    return f"{spec.name}: {lacking} (their rows {fate}, missing: {spec.missing}); to sample them: {command}"


def sampling_command(store: Store, spec: PassRateFilter) -> str:
    """The `factory passrate` line that samples the filter's missing rollouts in this run, for its label."""
    recorded = recorded_task_files(store)
    tasks = spec.tasks or (recorded[0] if len(recorded) == 1 else "TASKS_FILE")
    words = ["passrate", str(store.path.parent), "--tasks", tasks, "--model", spec.model, "--n", str(spec.min_samples)]
    return "factory " + shlex.join(words)


def stored_labels(store: Store) -> str:
    labels = [label for (label,) in store.query("SELECT DISTINCT model FROM rollouts ORDER BY 1 LIMIT 6")]
    return "rollouts hold model: " + ", ".join(labels) if labels else "the run has no rollouts"
