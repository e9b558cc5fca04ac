"""The three export formats as DuckDB SQL over the selection (contract: docs/export.md).

Each builder takes the selection query (factory.export.selection) and the
`--observations` option (observations.py: "train" flags the observations in
`messages`, is refused by `sharegpt`, leaves `afm` rows as they are) and returns a
query with the format's columns, the metadata columns and `split`. Columns are
built from the `turns` JSON with DuckDB's list functions, row by row inside the
engine, so a million-row export never passes through Python objects.
"""

from __future__ import annotations

from typing import Callable

from .observations import observations_unavailable
from .options import ExportError, FormatName

TURNS_TYPE = (
    '[{"role": "VARCHAR", "content": "VARCHAR", "loss": "BOOLEAN", "kind": "VARCHAR", '
    '"error": {"type": "VARCHAR", "feedback": "VARCHAR"}}]'
)
# What str.isspace() calls whitespace; RE2's \s is narrower. factory.mask.rows never trains a blank assistant turn.
SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
# A turn trains when flagged so, it is not a recorded mistake (refine keeps mistakes in context only) and it
# says something (render's rule, so every export's flags are the masks render draws).
SAYS_SOMETHING = f"regexp_matches(x.content, '[^{SPACE}]')"
TRAINS = f"(coalesce(x.loss, false) AND x.error IS NULL AND {SAYS_SOMETHING})"
# An observation (AutoCoA's stage 3 trains them: observations.py): a tool turn, or a user turn the path marked
# `observation` that answers an assistant turn (refine's DM lines; its opening instruction answers nothing).
# `t` is the row's turns, `i` the 1-based position of `x` in them.
OBSERVATION = (
    "(x.role = 'tool' OR (x.role = 'user' AND x.kind = 'observation' AND i > 1 AND t[i - 1].role = 'assistant'))"
)
METADATA = "split, source, task_id, script_id, weight"
# Rows whose calls are native (imported ATIF/ADP, `tools` set): a text format would write their turns without
# the calls, so only the native formats (openai, trl/llamafactory with tool_calls native) hold them.
TEXT_ROWS = "tools IS NULL"


def sharegpt_sql(selection: str, observations: str = "mask") -> str:
    """`conversations: [{from, value, loss}]` in the order LLaMA-Factory's sharegpt reader accepts.

    A system turn first stays `system`; tool and user turns are `human`
    (AgentRefine's convention). Neighbouring turns of one side are joined with a
    newline, so sides alternate human/gpt; a joined gpt turn trains only when all
    its parts do. Trailing human turns (nothing answers them) are dropped, and
    rows still not of the shape system? (human gpt)+ are left out. Observations cannot train here
    (observations.py): `observations="train"` is refused.
    """
    refused = observations_unavailable("sharegpt", observations)
    if refused:
        raise ExportError(refused)
    return f"""
        WITH parsed AS (
            SELECT *, from_json(turns, '{TURNS_TYPE}') AS t FROM ({selection}) WHERE turns IS NOT NULL AND {TEXT_ROWS}
        ), sided AS (
            SELECT *, list_transform(t, lambda x, i: CASE WHEN x.role = 'assistant' THEN 'gpt'
                WHEN x.role = 'system' AND i = 1 THEN 'system' ELSE 'human' END) AS sides FROM parsed
        ), runs AS (
            SELECT *, list_filter(range(1, len(t) + 1), lambda i: i = 1 OR sides[i] <> sides[i - 1]) AS starts
            FROM sided
        ), merged AS (
            SELECT *, list_transform(starts, lambda s, j: struct_pack(
                "from" := sides[s],
                value := array_to_string(list_transform(t[s:coalesce(starts[j + 1] - 1, len(t))],
                                                        lambda x: x.content), chr(10)),
                loss := sides[s] = 'gpt' AND list_bool_and(
                    list_transform(t[s:coalesce(starts[j + 1] - 1, len(t))], lambda x: {TRAINS}))
            )) AS conv FROM runs
        ), trimmed AS (
            SELECT *, conv[1:len(conv) + 1 - coalesce(
                list_position(list_reverse(list_transform(conv, lambda c: c."from")), 'gpt'), len(conv) + 1)
            ] AS conversations FROM merged
        )
        SELECT trajectory_id AS id, conversations, {METADATA} FROM trimmed
        WHERE regexp_full_match(array_to_string(list_transform(conversations, lambda c: left(c."from", 1)), ''),
                                's?(hg)+')"""


def messages_sql(selection: str, observations: str = "mask") -> str:
    """OpenAI `messages`, one per turn; `weight` 1/0 on assistant messages (0: context only), null elsewhere.
    `observations="train"`: each observation (OBSERVATION) gets `weight` 1 too (0 when blank), which axolotl
    trains and factory.mask.render trains under train_on_observations; the other user turns stay null."""
    observed = f"WHEN {OBSERVATION} THEN {SAYS_SOMETHING}::INTEGER " if observations == "train" else ""
    return f"""
        SELECT trajectory_id AS id,
               list_transform(t, lambda x, i: struct_pack(
                   role := x.role, content := x.content,
                   weight := CASE WHEN x.role = 'assistant' THEN {TRAINS}::INTEGER {observed}END)) AS messages,
               {METADATA}
        FROM (SELECT *, from_json(turns, '{TURNS_TYPE}') AS t FROM ({selection})
              WHERE turns IS NOT NULL AND json_array_length(turns) > 0 AND {TEXT_ROWS})"""


def afm_sql(selection: str, observations: str = "mask") -> str:
    """AFM single-string rows (coa/import only): instruction, empty input, output, observation spans.

    The rows are the same whatever `observations` says: the spans are facts about the text, and whether
    they train is the trainer's switch (AFM's fork: `ignore_observation`; factory.mask.render:
    train_on_observations), which the card's config sets (observations.py).

    Stored spans that are NULL stay NULL (not []): an empty list says "no
    observations, train every character", while NULL lets the renderer find
    the <observation> blocks itself, which is the only safe reading of unknown spans.
    """
    return f"""
        SELECT trajectory_id AS id, prompt AS instruction, '' AS input, completion AS output,
               from_json(observation_spans, '[["BIGINT"]]') AS observation_spans,
               {METADATA}
        FROM ({selection}) WHERE prompt IS NOT NULL AND completion IS NOT NULL"""


# (selection, observations "mask" | "train") -> the format's query
FORMAT_SQL: dict[FormatName, Callable[[str, str], str]] = {
    "sharegpt": sharegpt_sql,
    "messages": messages_sql,
    "afm": afm_sql,
}
