"""Synthetic trajectories for benchmarks/filter_scale.py, generated inside DuckDB in chunks.

Per 10 rows: 6 coa, 1 import, 3 refine. Texts are realistic in size (about 10 KB
of turns, conversations, completion and prompt per row): AFM completions with
2-11 tool calls (think, call, observation), refine turns in Thought/Action form,
stats JSON as the two paths write it, coa traces with the question, refine
scripts with the task. 3% of questions copy an earlier one exactly (case and
punctuation changed), 3% with one word changed; 5% of trajectories repeat a
tool call; every tenth task has 8 rollouts of the "policy" model.
"""

from __future__ import annotations

import random
import string

from factory.coa.tools import tool_tags
from factory.store.derived import ACTIONS, tool_inputs_sql

VOCAB_SIZE, SENTENCES, CHUNK = 20_000, 4_000, 100_000
VERBS = ["go", "take", "open", "look", "use", "give", "talk", "mix", "read", "push"]


def word_lists(seed: int = 0) -> tuple[list[str], list[str]]:
    """A vocabulary and a pool of sentences made of it: text with realistic lengths and some repetition."""
    rng = random.Random(seed)
    vocab = list({"".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 10))) for _ in range(2 * VOCAB_SIZE)})
    vocab = sorted(vocab)[:VOCAB_SIZE]
    rng.shuffle(vocab)
    common = vocab[:3000]
    sentences = [" ".join(rng.choices(common, k=rng.randint(8, 24))).capitalize() + "." for _ in range(SENTENCES)]
    return vocab, sentences


def words(seed: str, count: str) -> str:
    """`count` vocabulary words picked by a hash of `seed` and the position."""
    return f"array_to_string([vocab[1 + (hash({seed}, j) % {VOCAB_SIZE})::INT] FOR j IN range({count})], ' ')"


def sentence(*seed: str) -> str:
    return f"sentences[1 + (hash({', '.join(seed)}) % {SENTENCES})::INT]"


# Per row: its path, the earlier row whose question it copies (3% exactly, 3% with one word changed),
# its task key (an exact copy shares the task), how many tool calls, and whether one call repeats the one before.
GEN_ROWS = f"""
CREATE OR REPLACE TEMP TABLE gen AS
SELECT i, source, CASE WHEN near THEN i ELSE src END AS q, k, repeat_call, h,
       CASE WHEN src <> i AND NOT near THEN upper(question) || ' ?' ELSE question END AS question
FROM (
  SELECT *, array_to_string([vocab[1 + (hash(CASE WHEN near AND j = 4 THEN i ELSE src END, j) % {VOCAB_SIZE})::INT]
                             FOR j IN range(12 + (hash(src, 'len') % 28)::INT)], ' ') AS question
  FROM (
    SELECT i, CASE WHEN i % 10 < 6 THEN 'coa' WHEN i % 10 = 6 THEN 'import' ELSE 'refine' END AS source,
           CASE WHEN i > 1000 AND copy < 6 THEN i - 1 - (hash(i, 'back') % 1000)::BIGINT ELSE i END AS src,
           i > 1000 AND copy BETWEEN 3 AND 5 AS near, 2 + (hash(i, 'k') % 10)::INT AS k,
           hash(i, 'red') % 100 < 5 AS repeat_call, hash(i, 'h') % 1000 AS h
    FROM (SELECT i, hash(i, 'copy') % 100 AS copy FROM range($start, $stop) r(i))), (SELECT $vocab::VARCHAR[] AS vocab))
"""
# Tool inputs stored with each row, by the expressions the writers use (factory/store/derived.py).
STORED_INPUTS = f"coalesce({tool_inputs_sql(tool_tags())}, [])"
CALL_SEED = "CASE WHEN repeat_call AND t = 2 THEN 1 ELSE t END"  # the repeated call copies the first one

TOOL_CALL = (
    f"'<think>' || {sentence('i', 't')} || '</think>' || chr(10) || '<' || tag || '>' || "
    f"{words(f'i, {CALL_SEED}', f'3 + (hash(i, {CALL_SEED}) % 4)::INT')} "
    f"|| '</' || tag || '>'"
)
OBSERVATION = (
    "'<observation>' || "
    + sentence("i", "t", "'o'")
    + " || ' ' || "
    + sentence("i", "t", "'p'")
    + " || '</observation>'"
)
PLAN = sentence("i", "'plan'")
TURN = "{{'role': '{0}', 'content': {1}, 'loss': {2}, 'kind': '{3}', 'error': NULL}}"
CONV = "{{'from': '{0}', 'value': {1}, 'loss': {2}}}"

GEN_COA = f"""
INSERT INTO trajectories (trajectory_id, source, task_id, trace_id, variant, verified, rule, reason, turns,
    conversations, stats, n_turns, n_errors, n_corrections, prompt, completion, observation_spans, final_answer,
    correct, check_detail, created_at, tool_inputs)
SELECT *, {STORED_INPUTS} FROM (
SELECT id, source, 'task-' || q, id, 'mas', verified, CASE WHEN NOT verified THEN 'unclosed_tag' END,
       CASE WHEN NOT verified THEN 'grammar unclosed_tag: <think> never closed' END,
       to_json(list_prepend({TURN.format("user", "prompt", "false", "prompt")}, flatten(
           [[{TURN.format("assistant", "b.call", "true", "tool_call")}, {TURN.format("tool", "b.obs", "false", "observation")}]
            FOR b IN blocks])))::VARCHAR AS turns,
       to_json(list_prepend({CONV.format("human", "prompt", "false")}, flatten(
           [[{CONV.format("gpt", "b.call", "true")}, {CONV.format("human", "b.obs", "false")}] FOR b IN blocks])))::VARCHAR,
       to_json({{'tool_calls': k, 'tool_calls_by_type': {{'web_search': k // 2, 'crawl_page': k // 4, 'code': k - k // 2 - k // 4}},
                'tool_failures': h % 3, 'plans': 1, 'replans': (h // 7) % 2, 'reflections': (h // 3) % 3,
                'poor_reflections': 0, 'double_checks': 1 + h % 2, 'double_check_scores': [2 + h % 3],
                'low_double_check_corrected': h % 10 = 1, 'correct': correct, 'llm_calls': 3 * k,
                'prompt_tokens': 900 * k, 'completion_tokens': 200 * k, 'duration_s': k * 4.5}})::VARCHAR,
       1 + 2 * k, h % 3, (h // 7) % 2, prompt,
       '<plan>' || {PLAN} || '</plan>' || chr(10) || array_to_string([b.call || chr(10) || b.obs FOR b IN blocks], chr(10))
           || chr(10) || '<think>done</think>' || chr(10) || '<answer>answer ' || i || '</answer>' AS completion,
       '[]', 'answer ' || i, correct, CASE WHEN correct IS NOT NULL THEN 'em=' || correct::INT END,
       TIMESTAMP '2025-01-01' + to_seconds(i)
FROM (
    SELECT *, source || ':' || i AS id, h % 20 <> 0 AS verified,
           CASE WHEN h % 10 < 7 THEN true WHEN h % 10 < 9 THEN false END AS correct,
           'Answer the question; use the tools.' || chr(10) || 'Task: ' || question AS prompt,
           [{{'call': {TOOL_CALL}, 'obs': {OBSERVATION}}}
            FOR tag, t IN [tags[1 + (hash(i, {CALL_SEED}, 'tag') % 3)::INT] FOR t IN range(1, k + 1)]] AS blocks
    FROM gen, (SELECT $vocab::VARCHAR[] AS vocab, $sentences::VARCHAR[] AS sentences,
                      ['web_search', 'crawl_page', 'code'] AS tags)
    WHERE source <> 'refine')) t
"""


ACTION = (
    f"verbs[1 + (hash(i, {CALL_SEED}, 'v') % 10)::INT] || '(' || "
    f"vocab[1 + (hash(i, {CALL_SEED}, 'n') % 3000)::INT] || ')'"
)
STEP = f"'Thought: ' || {sentence('i', 't')} || chr(10) || 'Action: ' || act"
SEEN = "'Observation: ' || " + sentence("i", "t", "'o'")

GEN_REFINE = f"""
INSERT INTO scripts (script_id, persona_id, attempt, script, verified, created_at)
SELECT 'script:p' || i, 'p' || i, 0,
       to_json({{'task': question, 'environment': {{'description': {sentence("i", "'e1'")} || ' ' || {sentence("i", "'e2'")},
                 'player': {{'location': 'hall', 'inventory': []}}}},
                'actions': [{{'name': v, 'description': {sentence("i", "v")}}} FOR v IN verbs]}})::VARCHAR,
       true, TIMESTAMP '2025-01-01' + to_seconds(i)
FROM gen, (SELECT $sentences::VARCHAR[] AS sentences, {VERBS!r}::VARCHAR[] AS verbs) WHERE source = 'refine';
INSERT INTO trajectories (trajectory_id, source, persona_id, script_id, verified, reason, turns, conversations, stats,
    n_turns, n_errors, n_corrections, created_at, tool_inputs)
SELECT *, coalesce({ACTIONS}, []) FROM (
SELECT 'refine:p' || i, 'refine', 'p' || i, 'script:p' || i, verified,
       CASE WHEN NOT verified THEN 'budget: verifier kept failing' END,
       to_json(list_prepend({TURN.format("user", "opening", "false", "observation")}, flatten(
           [[{TURN.format("assistant", STEP, "t > errors", "thought_action")}, {TURN.format("user", SEEN, "false", "observation")}]
            FOR act, t IN actions])))::VARCHAR AS turns,
       to_json(list_prepend({CONV.format("human", "opening", "false")}, flatten(
           [[{CONV.format("gpt", STEP, "t > errors")}, {CONV.format("human", SEEN, "false")}] FOR act, t IN actions])))::VARCHAR,
       to_json({{'turns': 1 + 2 * k, 'assistant_turns': k, 'errors': errors, 'errors_by_type': {{'parameter': errors}},
                'corrections': corrections, 'kinds': {{'observation': 1 + k, 'thought_action': k}}}})::VARCHAR,
       1 + 2 * k, errors, corrections, TIMESTAMP '2025-01-01' + to_seconds(i)
FROM (
    SELECT *, h % 20 <> 0 AS verified, h % 3 AS corrections, h % 3 + (h // 3) % 2 AS errors,
           'You are in a house. ' || {sentence("i", "'start'")} || ' Task: ' || question AS opening,
           [{ACTION} FOR t IN range(1, k + 1)] AS actions
    FROM gen, (SELECT $vocab::VARCHAR[] AS vocab, $sentences::VARCHAR[] AS sentences, {VERBS!r}::VARCHAR[] AS verbs)
    WHERE source = 'refine')) t
"""

GEN_TRACES_ROLLOUTS = """
INSERT INTO coa_traces (trace_id, task_id, source, variant, domain, question, status, created_at)
SELECT source || ':' || i, 'task-' || q, CASE WHEN source = 'coa' THEN 'mas' ELSE 'import:openai' END, 'mas',
       CASE WHEN h % 5 = 0 THEN 'code' ELSE 'qa' END, question, 'answered', TIMESTAMP '2025-01-01' + to_seconds(i)
FROM gen WHERE source <> 'refine';
INSERT INTO rollouts (task_id, model, sample_index, completion, answer, correct, score, detail, request_hash, created_at)
SELECT 'task-' || i, 'policy', s, 'Let me think. The answer is ' || (hash(i, s) % 50), (hash(i, s) % 50)::VARCHAR,
       hash(i, s, 'ok') % 100 < h % 100, (hash(i, s, 'ok') % 100 < h % 100)::INT, 'em', md5(i || ':' || s),
       TIMESTAMP '2025-01-01' + to_seconds(i)
FROM gen, range(8) r(s) WHERE i % 10 = 0 AND q = i
"""


def generate(store, n: int) -> dict:
    """n trajectories (60% coa, 10% import, 30% refine) with traces, scripts and pass-rate rollouts.
    Rows are made by DuckDB SQL in a scratch database shaped like the store's tables, then written into
    the store chunk by chunk."""
    import duckdb

    vocab, sentences = word_lists()
    statements = [GEN_ROWS, GEN_COA, *GEN_REFINE.split(";\n"), *GEN_TRACES_ROLLOUTS.split(";\n")]
    scratch, tables = duckdb.connect(), ("trajectories", "scripts", "coa_traces", "rollouts")
    for table in tables:
        scratch.register("_shape", store.query_arrow(f"SELECT * FROM {table} LIMIT 0"))
        scratch.execute(f"CREATE TABLE {table} AS SELECT * FROM _shape")
        scratch.unregister("_shape")
    for start in range(0, n, CHUNK):  # chunks keep the generator's memory flat
        values = {"start": start, "stop": min(n, start + CHUNK), "vocab": vocab, "sentences": sentences}
        for statement in statements:
            scratch.execute(statement, {k: v for k, v in values.items() if f"${k}" in statement})
        for table in tables:
            rows = scratch.sql(f"SELECT * FROM {table}").to_arrow_table()
            store.insert_rows(table, {name: rows.column(name) for name in rows.column_names})
            scratch.execute(f"DELETE FROM {table}")
    scratch.close()
    (avg_bytes,) = store.query(
        "SELECT avg(length(coalesce(turns, '')) + length(coalesce(conversations, '')) + "
        "length(coalesce(completion, '')) + length(coalesce(prompt, '')) + length(stats)) "
        "FROM trajectories"
    )[0]
    (rollouts,) = store.query("SELECT count(*) FROM rollouts")[0]
    return {"avg_text_bytes_per_row": round(avg_bytes), "rollouts": rollouts}
