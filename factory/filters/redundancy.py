"""redundancy: the same (or nearly the same) tool input repeated inside one trajectory.

Tool inputs are the bodies of <web_search>, <crawl_page> and <code> blocks in an
AFM completion, or the `Action:` line of each assistant turn of a refine
trajectory, stored with the row when it was written (store/derived.py). Inputs
are compared after normalisation (lower case, punctuation to spaces); two different inputs are near-duplicates when the jaccard similarity
of their word sets reaches `similarity`. Pairs are only formed inside one
trajectory, so the work grows with the number of trajectories, not its square.

Most trajectories hold neither, so each row is screened first with list functions
(no join): it goes on to the pairwise check only if two of its normal forms are
equal, or two share their first word in sorted order (with this module's prefix
rule, a necessary condition for jaccard >= similarity when the inputs are short),
or one input is long enough that the first word alone is not enough.
"""

from __future__ import annotations

import math

from ..coa.tools.registry import tool_tags
from ..store import derived
from .config import RedundancyFilter
from .sql import ROWS, RowRule, normalised, scoped_base


def tool_inputs_sql(base: str) -> str:
    """(trajectory_id, inputs) for the pending rows of `base` in scope.

    A row written with its tool inputs (store/derived.py) is read as it is; a row written before
    migration 0009 is parsed with the writers' own expression, so both give the same list. The test
    on `tool_inputs` is one the scan makes first, so the text columns are read for the older rows alone.
    """
    rows = f"FROM {base} t WHERE {ROWS} AND t.in_scope"
    return (
        f"SELECT t.trajectory_id, t.tool_inputs AS inputs {rows} AND t.tool_inputs IS NOT NULL "
        f"UNION ALL SELECT t.trajectory_id, {derived.tool_inputs_sql(tool_tags())} AS inputs {rows} AND t.tool_inputs IS NULL"
    )


def distinct_sorted(column: str) -> str:
    """A sorted list column without its repeats: ~25% cheaper than list_sort(list_distinct(...))."""
    return f"list_filter({column}, lambda x, i: i = 1 OR x <> {column}[i - 1])"


def shown(expr: str) -> str:
    """An input as it appears in a reason: quoted, cut to 60 characters, on one line."""
    return f"'''' || left(regexp_replace({expr}, '\\s+', ' ', 'g'), 60) || ''''"


def long_input_words(similarity: float) -> int | None:
    """The fewest words for which the prefix rule below needs more than an input's first word (None: never).

    With n distinct words the prefix is n - ceil(s * n) + 1 words long; it is one word for every n
    below the number returned, so for such inputs one word (the smallest) is the whole prefix.
    """
    for n in range(1, 10_000):
        if n - math.ceil(similarity * n - 1e-9) + 1 > 1:
            return n
    return None


def screen_sql(similarity: float) -> str:
    """Might a row hold a repeat or a near-duplicate? A necessary condition, over the columns of
    `screened` below: list functions one lambda deep (nested lambdas cost DuckDB several times more).
    Empty normal forms stay in the lists (a pass less): two of them only make a row a suspect, and the
    pairwise check leaves them out."""
    checks = ["len(distinct_norms) < n_norms", "len(list_distinct(firsts)) < len(firsts)"]
    long_at = long_input_words(similarity)
    if long_at is not None:  # word counts with repeats: at least the distinct counts, so never too low
        checks.append(f"most_words >= {long_at}")
    return " OR ".join(checks)


def redundancy_rule(spec: RedundancyFilter) -> RowRule:
    # Near-duplicates by prefix filtering: with each input's words sorted, two sets of jaccard >= s
    # share a word among the first len - ceil(s * len) + 1 of either, so only inputs sharing such a word
    # are compared. Words sort as text (any fixed order works), so the screen's list_min is the same
    # first word. (The 1e-9 keeps float error from shortening the prefix.)
    prefix = f"words[1 : len(words) - ceil({spec.similarity} * len(words) - 1e-9)::INT + 1]"
    ctes = f"""
    row_inputs AS (
        SELECT trajectory_id, inputs, norms, list_distinct(norms) AS distinct_norms, len(norms) AS n_norms
        FROM (SELECT trajectory_id, inputs, [{normalised("x")} FOR x IN inputs] AS norms
              FROM ({tool_inputs_sql(scoped_base(spec))}))
    ),
    -- Each list computed once, in its own column: DuckDB does not share one expression between the
    -- branches of an OR.
    screened AS (
        SELECT trajectory_id, inputs, norms, distinct_norms, n_norms,
               [list_min(string_split(n, ' ')) FOR n IN distinct_norms] AS firsts,
               list_max([len(n) - len(replace(n, ' ', '')) + 1 FOR n IN distinct_norms]) AS most_words
        FROM row_inputs
    ),
    suspects AS MATERIALIZED (
        SELECT trajectory_id, inputs, norms FROM screened WHERE {screen_sql(spec.similarity)}
    ),
    tool_inputs AS (
        SELECT trajectory_id, unnest(inputs) AS input, unnest(norms) AS norm, generate_subscripts(inputs, 1) AS i
        FROM suspects
    ),
    -- One row per distinct normalised input (the normal forms come from the screen, computed once).
    distinct_inputs AS MATERIALIZED (
        SELECT * EXCLUDE (sorted), {distinct_sorted("sorted")} AS words
        FROM (SELECT trajectory_id, norm, min(i) AS i, min(input) AS input, count(*) AS n,
                     list_sort(string_split(norm, ' ')) AS sorted
              FROM tool_inputs GROUP BY trajectory_id, norm)
    ),
    repeats AS (
        SELECT trajectory_id, first(input ORDER BY n DESC, i) AS input, max(n) AS n  -- ties: the earliest input
        FROM distinct_inputs WHERE n > 1 AND norm <> '' GROUP BY trajectory_id
    ),
    prefixes AS (
        SELECT trajectory_id, i, unnest({prefix}) AS word FROM distinct_inputs WHERE norm <> ''
    ),
    candidates AS (
        SELECT DISTINCT a.trajectory_id, a.i AS i, b.i AS j
        FROM prefixes a JOIN prefixes b ON a.trajectory_id = b.trajectory_id AND a.word = b.word AND a.i < b.i
    ),
    pairs AS (
        SELECT c.trajectory_id, c.i, c.j, a.input AS first, b.input AS second,
               len(list_intersect(a.words, b.words)) / (len(list_distinct(a.words || b.words))) AS similarity
        FROM candidates c
        JOIN distinct_inputs a ON a.trajectory_id = c.trajectory_id AND a.i = c.i
        JOIN distinct_inputs b ON b.trajectory_id = c.trajectory_id AND b.i = c.j
    ),
    near AS (
        SELECT trajectory_id, first(first ORDER BY similarity DESC, i, j) AS first,
               first(second ORDER BY similarity DESC, i, j) AS second, max(similarity) AS similarity  -- one pair
        FROM pairs WHERE similarity >= {spec.similarity} GROUP BY trajectory_id
    )"""
    repeated = f"'repeated tool input: ' || {shown('rep.input')} || ' x' || rep.n"
    similar = (
        f"'near-duplicate tool inputs: ' || {shown('near.first')} || ' ~ ' || {shown('near.second')} "
        f"|| ' (' || round(near.similarity, 2) || ')'"
    )
    found = f"CASE WHEN rep.n IS NOT NULL THEN {repeated} WHEN near.similarity IS NOT NULL THEN {similar} END"
    joins = (
        "LEFT JOIN repeats rep ON rep.trajectory_id = t.trajectory_id "
        "LEFT JOIN near ON near.trajectory_id = t.trajectory_id"
    )
    if spec.action == "flag":
        return RowRule(keep="true", reason="NULL", note=found, joins=joins, ctes=ctes)
    return RowRule(keep="rep.n IS NULL AND near.similarity IS NULL", reason=found, joins=joins, ctes=ctes)
