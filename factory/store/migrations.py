"""The store's schema, as named migrations applied in order (SQLite's dialect).

Append new migrations at the end; never edit or reorder one that has shipped:
a run folder is brought up to date by applying the ones it lacks. A migration's
statements are split at ';' (comments dropped first), so no string may hold one.

Declared types say what DuckDB reads a column as (reader.py): TIMESTAMP (stored as ISO
text), BOOLEAN (0/1), JSON_TEXT (JSON, as text), VARCHAR_LIST_JSON (a JSON array of strings,
read as VARCHAR[]). Each declared name gives SQLite the affinity the values need (TEXT for
the JSON ones: a bare JSON number must stay text).

`0001_tables` is the schema that the DuckDB store of factory <= 0.37 reached through its
migrations 0001-0014 (`factory store convert` copies such a store's rows into it); views that
need DuckDB's aggregates (`curation`) live in reader.py. `0002_change_log` adds the triggers that
let a copy catch up (changes.py).
"""

from __future__ import annotations

import sqlite3

from .changes import change_log_migration

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_tables",
        """
        CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, command VARCHAR, config VARCHAR, started_at TIMESTAMP,
            finished_at TIMESTAMP, status VARCHAR
        );
        -- One row per request key: a retried or re-run request replaces its row (adding the old row's
        -- attempts, tokens and cost), so the log never holds duplicates and a cache hit is a counter bump.
        CREATE TABLE llm_calls (
            request_hash VARCHAR PRIMARY KEY, run_id VARCHAR, stage VARCHAR, provider VARCHAR, model VARCHAR,
            namespace VARCHAR, sample_index INTEGER, params VARCHAR, messages VARCHAR, response_schema VARCHAR,
            response VARCHAR, parsed VARCHAR, finish_reason VARCHAR, status VARCHAR, error_kind VARCHAR,
            error VARCHAR, attempts INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd DOUBLE,
            latency_s DOUBLE, started_at TIMESTAMP, finished_at TIMESTAMP, cache_hits INTEGER DEFAULT 0,
            batch_id VARCHAR
        );
        CREATE INDEX llm_calls_stage ON llm_calls (stage, status);
        -- Calls with an attempt sent and no answer recorded yet (calllog.py): a process killed meanwhile
        -- leaves them here, and the next writer adds their attempts to the log as interrupted calls.
        CREATE TABLE llm_pending (
            request_hash VARCHAR PRIMARY KEY, run_id VARCHAR, fixed JSON_TEXT, attempts INTEGER,
            updated_at TIMESTAMP
        );
        -- One row per persona id: library, user-file and expanded personas alike;
        -- parent_id links an expanded persona to the seed it grew from.
        CREATE TABLE personas (
            persona_id VARCHAR PRIMARY KEY, text VARCHAR, source VARCHAR, parent_id VARCHAR, created_at TIMESTAMP
        );
        CREATE TABLE scripts (
            script_id VARCHAR PRIMARY KEY, persona_id VARCHAR, attempt INTEGER, script VARCHAR,
            verified BOOLEAN, problems VARCHAR, created_at TIMESTAMP
        );
        -- Refine trajectories and distilled Chain-of-Agents ones (the AFM columns from task_id on).
        -- tool_inputs: each row's tool inputs, parsed when it is written (store/derived.py), so the
        -- redundancy filter reads a list, and tools are an imported native trajectory's tool definitions.
        CREATE TABLE trajectories (
            trajectory_id VARCHAR PRIMARY KEY, source VARCHAR, persona_id VARCHAR, script_id VARCHAR,
            verified BOOLEAN, reason VARCHAR, steps VARCHAR, turns VARCHAR, conversations VARCHAR,
            stats VARCHAR, n_turns INTEGER, n_errors INTEGER, n_corrections INTEGER, llm_calls INTEGER,
            prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd DOUBLE, created_at TIMESTAMP,
            task_id VARCHAR, trace_id VARCHAR, variant VARCHAR, rule VARCHAR, prompt VARCHAR, completion VARCHAR,
            observation_spans JSON_TEXT, final_answer VARCHAR, correct BOOLEAN, check_detail VARCHAR,
            tool_inputs VARCHAR_LIST_JSON, tools VARCHAR
        );
        CREATE TABLE verdicts (
            trajectory_id VARCHAR, attempt INTEGER, ok BOOLEAN, rule VARCHAR, failed_step INTEGER,
            reason VARCHAR, n_steps INTEGER, created_at TIMESTAMP, PRIMARY KEY (trajectory_id, attempt)
        );
        -- Chain-of-Agents: one trace per multi-agent run or imported log (schema: docs/coa_trace.md).
        CREATE TABLE coa_traces (
            trace_id VARCHAR PRIMARY KEY, task_id VARCHAR, source VARCHAR, variant VARCHAR, domain VARCHAR,
            question VARCHAR, status VARCHAR, reason VARCHAR, final_answer VARCHAR, agents JSON_TEXT,
            events JSON_TEXT, n_events INTEGER, n_tool_calls INTEGER, n_replans INTEGER, llm_calls INTEGER,
            prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd DOUBLE, duration_s DOUBLE,
            created_at TIMESTAMP, tools VARCHAR_LIST_JSON, steps VARCHAR
        );
        -- Filters write one verdict per (trajectory, filter); nothing is ever deleted from trajectories.
        -- The runner keeps the pair unique (it deletes what it rewrites); filter_configs holds each filter's
        -- config hash so a re-run recomputes only the filters whose config changed.
        CREATE TABLE filter_verdicts (
            trajectory_id VARCHAR, filter VARCHAR, keep BOOLEAN, reason VARCHAR, weight DOUBLE DEFAULT 1.0,
            split VARCHAR, config_hash VARCHAR, created_at TIMESTAMP
        );
        CREATE INDEX filter_verdicts_filter ON filter_verdicts (filter, trajectory_id);
        CREATE TABLE filter_configs (
            filter VARCHAR PRIMARY KEY, position INTEGER, kind VARCHAR, params JSON_TEXT, config_hash VARCHAR,
            updated_at TIMESTAMP
        );
        -- Every pass-rate sample.
        CREATE TABLE rollouts (
            task_id VARCHAR, model VARCHAR, sample_index INTEGER, completion VARCHAR, answer VARCHAR,
            correct BOOLEAN, score DOUBLE, detail VARCHAR, request_hash VARCHAR, created_at TIMESTAMP,
            PRIMARY KEY (task_id, model, sample_index)
        );
        -- Provider batch APIs (factory/llm/batch): each batch the provider accepted, recorded before it is
        -- polled, and the custom ids it holds, so a rerun follows a batch instead of submitting it again.
        CREATE TABLE llm_batches (
            batch_id VARCHAR PRIMARY KEY, provider VARCHAR, base_url VARCHAR, state VARCHAR, requests INTEGER,
            completed INTEGER, failed INTEGER, input_file_id VARCHAR, output_file_id VARCHAR,
            error_file_id VARCHAR, results_url VARCHAR, error VARCHAR, created_at TIMESTAMP,
            updated_at TIMESTAMP, downloaded_at TIMESTAMP
        );
        CREATE TABLE llm_batch_requests (
            batch_id VARCHAR, custom_id VARCHAR, request_hash VARCHAR, PRIMARY KEY (batch_id, custom_id)
        );
        -- Preference pairs a stage generated (coa "when to act"). prompt / chosen / rejected are JSON lists
        -- of chat messages; one side NULL is a KTO-only row. evidence: JSON, why this side won.
        CREATE TABLE preference_pairs (
            pair_id VARCHAR PRIMARY KEY, kind VARCHAR, source VARCHAR, task_id VARCHAR, trajectory_id VARCHAR,
            prompt VARCHAR, chosen VARCHAR, rejected VARCHAR, evidence VARCHAR, created_at TIMESTAMP
        )
        """,
    ),
    ("0002_change_log", change_log_migration()),  # store/changes.py: copies catch up instead of starting over
]


def migration_statements(sql: str) -> list[str]:
    """A migration's statements: comments dropped, split at each ';' that ends a whole statement (a
    trigger's body holds some that do not; no string in a migration holds one)."""
    code = "\n".join(line.split("--")[0] for line in sql.splitlines())
    statements, pending = [], ""
    for piece in code.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending[:-1])
            pending = ""
    return [statement for statement in [*statements, pending[:-1]] if statement.strip()]
