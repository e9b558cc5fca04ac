"""decontaminate: drop rows that share an n-gram with a named evaluation set (datatrove's n-gram decontamination).

Like datatrove's `NGramsDecontIndexer` / `NGramsDecontFilter` (pipeline/decont/n_grams.py,
defaults n_grams=12, find_query_ngrams=False, find_overlap_ngrams=True), an evaluation item
contributes the n-grams of its answer and the n-grams that straddle the end of its question
and the start of its answer; with `query_ngrams: true` also those of the question alone. A
row is contaminated when any n-gram of its text (the task's question, then its final answer)
is one of them. Text is normalised as datatrove's `simplify_text` does by default: lower
case, accents stripped, every run of digits to one "0", punctuation to spaces; words are
split on spaces.

Everything is SQL, on both sides, so the filter and the task-synthesis gate
(factory/synth/decontam.py, which runs these same statements in an in-memory DuckDB) cannot
disagree. The evaluation sets are task files (`factory.tasks.load_tasks`: question plus
answers), read once when the filter compiles.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..tasks import TaskError, load_tasks
from .config import DecontaminateFilter
from .dedup import TASK_JOINS
from .sql import Compiled, quote, scoped_base

TEMP_TABLES = ("decontam_items", "decontam_grams")
CHUNK = 500  # evaluation items per INSERT statement


def norm_sql(text: str) -> str:
    lowered = f"regexp_replace(strip_accents(lower({text})), '[0-9]+', '0', 'g')"
    return rf"trim(regexp_replace({lowered}, '[^\p{{L}}\p{{N}}]+', ' ', 'g'))"


def words_sql(text: str) -> str:
    return f"[w FOR w IN string_split({norm_sql(text)}, ' ') IF w <> '']"


def grams_sql(words: str, n: int, first: str = "1") -> str:
    """The n-grams of a word list that start at 1-based position `first` or later."""
    words = f"({words})"  # "q || l" is one list: sliced whole, not its last part
    return (
        f"[array_to_string({words}[i:i + {n - 1}], ' ') FOR i IN range(greatest({first}, 1), len({words}) - {n - 2})]"
    )


def eval_items(paths: list[Path]) -> list[tuple[str, str, str]]:
    """(set name, question, answer) for every answer alias of every item of the evaluation sets."""
    items = []
    for path in paths:
        try:
            tasks = load_tasks(path)
        except TaskError as exc:
            raise ConfigError(f"evaluation set: {exc}") from None
        items += [(path.stem, task.question, answer) for task in tasks for answer in task.answers or [""]]
    return items


def index_statements(items: list[tuple[str, str, str]], n: int, query_ngrams: bool) -> list[str]:
    """Statements that fill decontam_grams(gram, eval_set) from the evaluation items."""
    out = ["CREATE OR REPLACE TEMP TABLE decontam_items (eval_set VARCHAR, query VARCHAR, label VARCHAR)"]
    for start in range(0, len(items), CHUNK):
        rows = ", ".join(f"({quote(s)}, {quote(q)}, {quote(a)})" for s, q, a in items[start : start + CHUNK])
        out.append(f"INSERT INTO decontam_items VALUES {rows}")
    # Overlap and label n-grams are those holding at least one answer word: they start at len(q) - n + 2 or later.
    first = "1" if query_ngrams else f"len(q) - {n - 2}"
    out.append(f"""CREATE OR REPLACE TEMP TABLE decontam_grams AS
        SELECT DISTINCT gram, eval_set FROM (
            SELECT eval_set, unnest({grams_sql("list_concat(q, l)", n, first)}) AS gram
            FROM (SELECT eval_set, {words_sql("query")} AS q, {words_sql("label")} AS l FROM decontam_items))""")
    return out


def contaminated_sql(texts: str, n: int) -> str:
    """(id, gram, eval_set): the first shared n-gram of each text of `texts` (a relation of id, text)."""
    return f"""
        SELECT id, min(gram) AS gram, min(eval_set) AS eval_set FROM (
            SELECT id, unnest({grams_sql("w", n)}) AS gram FROM (SELECT id, {words_sql("text")} AS w FROM {texts})
        ) JOIN decontam_grams USING (gram) GROUP BY id"""


def decontam_compiled(spec: DecontaminateFilter) -> Compiled:
    n = spec.ngrams
    texts = f"""(SELECT t.trajectory_id AS id,
                        coalesce(nullif(trim(c.question), ''), s.task, '') || ' ' || coalesce(t.final_answer, '') AS text
                 FROM {scoped_base(spec)} t {TASK_JOINS} WHERE t.in_scope)"""
    setup = index_statements(eval_items(spec.sets), n, spec.query_ngrams)
    setup.append(f"CREATE OR REPLACE TEMP TABLE decontam_hits AS {contaminated_sql(texts, n)}")
    select = """
        SELECT t.trajectory_id, h.id IS NULL AS keep,
               CASE WHEN h.id IS NOT NULL THEN 'contaminated: ' || h.eval_set || ' (' || h.gram || ')' END AS reason,
               1.0 AS weight, NULL AS split
        FROM filter_base t LEFT JOIN decontam_hits h ON h.id = t.trajectory_id"""
    teardown = [f"DROP TABLE IF EXISTS {name}" for name in (*TEMP_TABLES, "decontam_hits")]
    return Compiled(spec=spec, select=select, setup=setup, teardown=teardown, whole_set=True)
