"""template: trained <think> / <reflection> blocks that open the way too many others in the run do.

A model that copies an example phrase from its prompt ("This result shows ...") writes the same
opening into most of its reflections; trained on, that phrase becomes the student's only way to
start one (issue 25, part 3). The AFM completion trains every block but the observations, so every
<think> and <reflection> of a coa / import row is a trained one.

A block's opening is its first `words` words, lower-cased (letters and digits; a block shorter than
that opens with all its words). Over the rows the filter judges, an opening that opens more than
`max_share` of all blocks of its kind, in at least `min_rows` rows, is a template, and every row with
a block that opens with it is dropped, the reason quoting the opening and its share. A row is also
dropped when a block opens with one of the configured `phrases` (compared word by word, the same way).

The share is a property of the whole set, so, like dedup, a new or rewritten row recomputes every
verdict (`Compiled.whole_set`). `block_words_sql` is also what `factory quality` counts openings with
(factory/reporting/coa_quality.py), so the report and the filter agree on what an opening is.
"""

from __future__ import annotations

from .config import TemplateFilter
from .sql import Compiled, quote, scoped_base

BLOCK_KINDS = ("think", "reflection")
# A word: letters and digits, with inner apostrophes ("i'll"); punctuation and markup are not words.
WORD = r"[\pL\pN]+(?:'[\pL\pN]+)*"
# The rating lines of a reflection (coa/afm/scores.py reads them; the same lenient shape): every reflection
# carries them, so they are form, not an opening. Removed before the words are taken.
SCORE_LINE = (
    r"(?im)^[ \t>*#\-\d.()]*(?:information[ _]conflict|tool[ _]effectiveness|trajectory[ _](?:progress|monitoring))"
    r"\**[ \t]*[:=\-][ \t]*\**(?:good|average|fair|poor)\b.*$"
)
TEMP_TABLES = ("template_blocks", "template_grams", "template_hits")


def words_sql(text: str) -> str:
    """The lower-cased words of a text, as a list."""
    return f"regexp_extract_all(lower({text}), {quote(WORD)})"


def opening_sql(words: str, n: int) -> str:
    """The first n words joined by spaces (all of them when there are fewer)."""
    return f"array_to_string({words}[1:{n}], ' ')"


def block_words_sql(rows: str, kinds: tuple[str, ...] | list[str] = BLOCK_KINDS) -> str:
    """(trajectory_id, kind, pos, words): each block of `kinds` with at least one word in the completions of
    `rows` (a relation with trajectory_id and completion); pos counts the blocks of one kind from 1.

    Split on the tag strings like the tool inputs (store/derived.py): tool output is neutralised before it
    is stored, so a tag string in the completion is always a block's own."""
    names = ", ".join(quote(kind) for kind in kinds)
    text = f"CASE WHEN kind = 'reflection' THEN regexp_replace(body, {quote(SCORE_LINE)}, '', 'g') ELSE body END"
    bodies = "[split_part(p, '</' || k.kind || '>', 1) FOR p IN string_split(r.completion, '<' || k.kind || '>')[2:]]"
    return f"""
        SELECT trajectory_id, kind, pos, words FROM (
            SELECT trajectory_id, kind, pos, {words_sql(text)} AS words FROM (
                SELECT trajectory_id, kind, unnest(bodies) AS body, generate_subscripts(bodies, 1) AS pos
                FROM (SELECT r.trajectory_id, k.kind, {bodies} AS bodies
                      FROM ({rows}) r CROSS JOIN (SELECT unnest([{names}]) AS kind) k
                      WHERE r.completion IS NOT NULL)))
        WHERE len(words) > 0"""


def template_compiled(spec: TemplateFilter) -> Compiled:
    rows = f"SELECT trajectory_id, completion FROM {scoped_base(spec)} t WHERE t.in_scope"
    setup = [
        f"""CREATE OR REPLACE TEMP TABLE template_blocks AS
        SELECT *, {opening_sql("words", spec.words)} AS opening FROM ({block_words_sql(rows, spec.blocks)})""",
        f"CREATE OR REPLACE TEMP TABLE template_grams AS {grams_sql(spec)}",
        f"CREATE OR REPLACE TEMP TABLE template_hits AS {hits_sql(spec)}",
    ]
    select = """
        SELECT t.trajectory_id, h.reason IS NULL AS keep, h.reason, 1.0 AS weight, NULL AS split
        FROM filter_base t LEFT JOIN template_hits h ON h.trajectory_id = t.trajectory_id"""
    teardown = [f"DROP TABLE IF EXISTS {name}" for name in TEMP_TABLES]
    return Compiled(spec=spec, select=select, setup=setup, teardown=teardown, whole_set=True)


def grams_sql(spec: TemplateFilter) -> str:
    """The openings over the share: (kind, opening, blocks, total blocks of the kind)."""
    if spec.max_share is None:  # phrases only
        return "SELECT NULL::VARCHAR AS kind, NULL::VARCHAR AS opening, 0 AS blocks, 0 AS total WHERE false"
    return f"""
        SELECT kind, opening, blocks, total FROM (
            SELECT kind, opening, count(*) AS blocks, count(DISTINCT trajectory_id) AS n_rows,
                   sum(count(*)) OVER (PARTITION BY kind) AS total
            FROM template_blocks GROUP BY kind, opening)
        WHERE blocks > {spec.max_share} * total AND n_rows >= {spec.min_rows}"""


def hits_sql(spec: TemplateFilter) -> str:
    """Per trajectory, the reason of its first offending block: a configured phrase before a frequent opening."""
    gram = (
        "'template opening: ' || b.kind || ' ''' || g.opening || ''' opens ' || g.blocks || ' of ' || g.total "
        "|| ' ' || b.kind || ' blocks (' || round(100.0 * g.blocks / g.total, 1) || '%)'"
    )
    hits = [
        f"SELECT b.trajectory_id, 1 AS rank, b.kind, b.pos, {gram} AS reason "
        "FROM template_blocks b JOIN template_grams g ON g.kind = b.kind AND g.opening = b.opening"
    ]
    if spec.phrases:
        values = ", ".join(f"({quote(phrase)})" for phrase in spec.phrases)
        phrases = f"(SELECT phrase, {words_sql('phrase')} AS words FROM (VALUES {values}) v(phrase))"
        said = "'template phrase: ' || b.kind || ' opens with ''' || p.phrase || ''''"
        hits.append(
            f"SELECT b.trajectory_id, 0 AS rank, b.kind, b.pos, {said} AS reason FROM template_blocks b "
            f"JOIN {phrases} p ON len(p.words) > 0 AND b.words[1:len(p.words)] = p.words"
        )
    return f"""
        SELECT trajectory_id, arg_min(reason, (rank, kind, pos)) AS reason
        FROM ({" UNION ALL ".join(hits)}) GROUP BY trajectory_id"""
