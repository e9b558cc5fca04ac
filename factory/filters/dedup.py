"""dedup: exact and near-duplicate task text across trajectories; the first row of a group stays.

The task text is the question of the trajectory's trace (coa / import), else the
task of its script (refine), else its first turn, else its AFM prompt; it is
compared normalised (lower case, punctuation to spaces). "First" is the earliest
by (created_at, trajectory_id).

Exact: rows with the same normalised text; all but the first are dropped as
"duplicate of <first id>".

Near (MinHash LSH, all in SQL): each remaining text becomes word shingles
hashed to 32 bits; `bands x rows_per_band` seeded hash functions hash(h + seed)
give its MinHash signature; rows that share all values of any band are
candidates (probability 1 - (1 - J^r)^b for jaccard J), and each candidate pair
is confirmed with the exact jaccard of the shingle sets. A row is dropped as
"near-duplicate of <id>" naming the earliest earlier row within `threshold`.
Inside one LSH bucket a row is compared with at most `max_bucket` earlier rows,
so a huge bucket of templated questions stays linear instead of quadratic.

A verdict names the first row of its group, so it depends on the whole set:
see `Compiled.whole_set` and the runner.
"""

from __future__ import annotations

import random

from .config import DedupFilter
from .sql import Compiled, normalised, scoped_base

PRIME = 4294967311  # shingle hashes are taken mod this (> 2**32), so h + seed stays inside 64 bits for seed < 2**31

# The task is taken out of the script before the join, so the whole script JSON never travels through it;
# try() makes an invalid script a NULL task (parsed once, where json_valid first would parse it twice).
TASK_JOINS = """LEFT JOIN (SELECT trace_id, question FROM coa_traces) c ON c.trace_id = t.trace_id
              LEFT JOIN (SELECT script_id, try(json_extract_string(script, '$.task')) AS task FROM scripts
                        ) s ON s.script_id = t.script_id"""

# Task texts: the question or the script's task; the first turn (else the prompt) only for rows with
# neither, read through a join so that DuckDB fetches those big columns for those rows alone.
# Materialised, because the normalising regular expression is the costly part and a filter on it
# would be evaluated twice.
TEXTS_SQL = """
    known AS MATERIALIZED (
        SELECT t.trajectory_id AS id, t.created_at AS created, coalesce(nullif(trim(c.question), ''), s.task) AS text
        FROM {base} t {joins} WHERE t.in_scope),
    fallback AS (
        SELECT t.trajectory_id AS id,
               CASE WHEN json_valid(t.turns) THEN json_extract_string(t.turns, '$[0].content') ELSE t.prompt END AS text
        FROM trajectories t JOIN known k ON k.id = t.trajectory_id AND k.text IS NULL),
    texts AS MATERIALIZED (
        SELECT k.id, k.created, {norm} AS norm FROM known k LEFT JOIN fallback f USING (id))"""

TEMP_TABLES = ("dedup_docs", "dedup_bands", "dedup_near")


def shingle_sql(words: int) -> str:
    """The 32-bit hashes of a text's word k-grams (the whole text when it is shorter than k words)."""
    gram = ", ".join(f"w[i + {j}]" for j in range(words))
    return (
        f"CASE WHEN len(w) < {words} THEN [hash(norm) % {PRIME}] "
        f"ELSE [hash({gram}) % {PRIME} FOR i IN range(1, len(w) - {words} + 2)] END"
    )


def band_keys_sql(spec: DedupFilter) -> str:
    """A list of `bands` keys, each the hash of `rows_per_band` MinHash values."""
    rng = random.Random(spec.seed)
    bands = []
    for _ in range(spec.bands):
        # hash(h + seed): DuckDB's 64-bit mixer, one independent-looking function per seed; 40% cheaper
        # per shingle than the textbook (a*h + b) mod p, whose checked multiply and modulo dominate.
        mins = [f"list_min([hash(h + {rng.randrange(0, 2**31)}) FOR h IN hs])" for _ in range(spec.rows_per_band)]
        bands.append(f"hash({', '.join(mins)})")
    return f"[{', '.join(bands)}]"


def dedup_compiled(spec: DedupFilter) -> Compiled:
    setup = [
        f"""CREATE OR REPLACE TEMP TABLE dedup_docs AS
        WITH {TEXTS_SQL.format(base=scoped_base(spec), joins=TASK_JOINS, norm=normalised("coalesce(k.text, f.text)"))}
        SELECT id, created, norm, first_id FROM texts JOIN (
            SELECT norm, arg_min(id, (created IS NULL, created, id)) AS first_id FROM texts WHERE norm <> '' GROUP BY norm
        ) USING (norm)""",  # a GROUP BY and a join: a third of what a window over the partitions costs
    ]
    if spec.near:
        setup += near_setup(spec)
    near_join = "LEFT JOIN dedup_near n ON n.id = t.trajectory_id" if spec.near else ""
    near_id = "n.first_id" if spec.near else "NULL"
    near_reason = ("WHEN n.first_id IS NOT NULL THEN 'near-duplicate of ' || n.first_id "
                   "|| ' (jaccard ' || round(n.similarity, 2) || ')'") if spec.near else ""  # fmt: skip
    select = f"""
        SELECT t.trajectory_id,
               coalesce(d.first_id = t.trajectory_id, true) AND {near_id} IS NULL AS keep,
               CASE WHEN d.first_id <> t.trajectory_id THEN 'duplicate of ' || d.first_id
                    {near_reason}
               END AS reason,
               1.0 AS weight, NULL AS split
        FROM filter_base t LEFT JOIN dedup_docs d ON d.id = t.trajectory_id {near_join}"""
    teardown = [f"DROP TABLE IF EXISTS {name}" for name in TEMP_TABLES]
    return Compiled(spec=spec, select=select, setup=setup, teardown=teardown, whole_set=True)


def near_setup(spec: DedupFilter) -> list[str]:
    shingles = f"(SELECT id, created, {shingle_sql(spec.shingle_words)} AS hs FROM (SELECT id, created, norm, string_split(norm, ' ') AS w FROM dedup_docs WHERE {{rows}}))"
    return [
        # Only the first row of each exact group takes part: its copies are already dropped. The shingles
        # are not kept: only candidate pairs need them again, and those are few.
        f"""CREATE OR REPLACE TEMP TABLE dedup_bands AS
        SELECT id, created, band, key
        FROM (SELECT id, created, unnest(keys) AS key, generate_subscripts(keys, 1) AS band
              FROM (SELECT id, created, {band_keys_sql(spec)} AS keys FROM {shingles.format(rows="id = first_id")}))""",
        f"""CREATE OR REPLACE TEMP TABLE dedup_near AS
        WITH shared AS (  -- buckets holding more than one row: the only place candidates come from
            SELECT band, key FROM dedup_bands GROUP BY band, key HAVING count(*) > 1
        ), members AS (
            SELECT b.band, b.key, b.id,
                   row_number() OVER (PARTITION BY b.band, b.key ORDER BY b.created NULLS LAST, b.id) AS rank
            FROM dedup_bands b SEMI JOIN shared USING (band, key)
        ), candidates AS MATERIALIZED (
            SELECT DISTINCT a.id AS first_id, b.id
            FROM members a JOIN members b ON a.band = b.band AND a.key = b.key AND a.rank < b.rank
            WHERE b.rank - a.rank <= {spec.max_bucket}
        ), shingled AS MATERIALIZED (
            SELECT id, created, list_distinct(hs) AS hs FROM {
            shingles.format(rows="id IN (SELECT first_id FROM candidates UNION SELECT id FROM candidates)")
        }
        ), scored AS (
            SELECT c.id, c.first_id, first.created AS first_created,
                   len(list_intersect(first.hs, other.hs)) AS common, len(first.hs) + len(other.hs) AS total
            FROM candidates c
            JOIN shingled first ON first.id = c.first_id
            JOIN shingled other ON other.id = c.id
        )
        SELECT id, arg_min(first_id, (first_created, first_id)) AS first_id,
               arg_min(common / (total - common), (first_created, first_id)) AS similarity
        FROM scored WHERE common / (total - common) >= {spec.threshold}
        GROUP BY id""",
    ]
