"""The store's schema, as named migrations applied in order.

Append new migrations at the end; never edit or reorder one that has shipped:
an old run folder is brought up to date by applying the ones it lacks.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_runs",
        """
        CREATE TABLE runs (
            run_id      VARCHAR PRIMARY KEY,
            command     VARCHAR,
            config      VARCHAR,
            started_at  TIMESTAMP,
            finished_at TIMESTAMP,
            status      VARCHAR
        )
        """,
    ),
    (
        "0002_llm_calls",
        # One row per request key: a retried or re-run request replaces its row,
        # so the log never holds duplicates and a cache hit is a counter bump.
        """
        CREATE TABLE llm_calls (
            request_hash      VARCHAR PRIMARY KEY,
            run_id            VARCHAR,
            stage             VARCHAR,
            provider          VARCHAR,
            model             VARCHAR,
            namespace         VARCHAR,
            sample_index      INTEGER,
            params            VARCHAR,
            messages          VARCHAR,
            response_schema   VARCHAR,
            response          VARCHAR,
            parsed            VARCHAR,
            finish_reason     VARCHAR,
            status            VARCHAR,
            error_kind        VARCHAR,
            error             VARCHAR,
            attempts          INTEGER,
            prompt_tokens     INTEGER,
            completion_tokens INTEGER,
            cost_usd          DOUBLE,
            latency_s         DOUBLE,
            started_at        TIMESTAMP,
            finished_at       TIMESTAMP,
            cache_hits        INTEGER DEFAULT 0
        )
        """,
    ),
    ("0003_llm_calls_stage_index", "CREATE INDEX llm_calls_stage ON llm_calls (stage, status)"),
    (
        "0004_personas",
        # One row per persona id: library, user-file and expanded personas alike;
        # parent_id links an expanded persona to the seed it grew from.
        """
        CREATE TABLE personas (
            persona_id VARCHAR PRIMARY KEY,
            text       VARCHAR,
            source     VARCHAR,
            parent_id  VARCHAR,
            created_at TIMESTAMP
        )
        """,
    ),
    (
        "0005_refine",
        """
        CREATE TABLE scripts (
            script_id VARCHAR PRIMARY KEY, persona_id VARCHAR, attempt INTEGER, script VARCHAR,
            verified BOOLEAN, problems VARCHAR, created_at TIMESTAMP
        );
        CREATE TABLE trajectories (
            trajectory_id VARCHAR PRIMARY KEY, source VARCHAR, persona_id VARCHAR, script_id VARCHAR,
            verified BOOLEAN, reason VARCHAR, steps VARCHAR, turns VARCHAR, conversations VARCHAR,
            stats VARCHAR, n_turns INTEGER, n_errors INTEGER, n_corrections INTEGER, llm_calls INTEGER,
            prompt_tokens INTEGER, completion_tokens INTEGER, cost_usd DOUBLE, created_at TIMESTAMP
        );
        CREATE TABLE verdicts (
            trajectory_id VARCHAR, attempt INTEGER, ok BOOLEAN, rule VARCHAR, failed_step INTEGER,
            reason VARCHAR, n_steps INTEGER, created_at TIMESTAMP, PRIMARY KEY (trajectory_id, attempt)
        );
        """,
    ),
    (
        "0006_coa",
        # Chain-of-Agents: one trace per multi-agent run or imported log (schema: docs/coa_trace.md);
        # distilled trajectories share `trajectories` with the refine path, with the AFM columns added.
        """
        CREATE TABLE coa_traces (
            trace_id VARCHAR PRIMARY KEY, task_id VARCHAR, source VARCHAR, variant VARCHAR, domain VARCHAR,
            question VARCHAR, status VARCHAR, reason VARCHAR, final_answer VARCHAR, agents JSON, events JSON,
            n_events INTEGER, n_tool_calls INTEGER, n_replans INTEGER, llm_calls INTEGER, prompt_tokens INTEGER,
            completion_tokens INTEGER, cost_usd DOUBLE, duration_s DOUBLE, created_at TIMESTAMP
        );
        ALTER TABLE trajectories ADD COLUMN task_id VARCHAR;
        ALTER TABLE trajectories ADD COLUMN trace_id VARCHAR;
        ALTER TABLE trajectories ADD COLUMN variant VARCHAR;
        ALTER TABLE trajectories ADD COLUMN rule VARCHAR;
        ALTER TABLE trajectories ADD COLUMN prompt VARCHAR;
        ALTER TABLE trajectories ADD COLUMN completion VARCHAR;
        ALTER TABLE trajectories ADD COLUMN observation_spans JSON;
        ALTER TABLE trajectories ADD COLUMN final_answer VARCHAR;
        ALTER TABLE trajectories ADD COLUMN correct BOOLEAN;
        ALTER TABLE trajectories ADD COLUMN check_detail VARCHAR;
        """,
    ),
    (
        "0007_curation",
        # Filters write one verdict per (trajectory, filter); nothing is ever deleted from
        # trajectories. `filter_configs` holds each filter's config hash so a re-run recomputes
        # only the filters whose config changed (and rows they have not judged yet).
        # `rollouts` keeps every pass-rate sample; `curation` folds the verdicts per trajectory.
        """
        CREATE TABLE filter_verdicts (
            trajectory_id VARCHAR, filter VARCHAR, keep BOOLEAN, reason VARCHAR, weight DOUBLE DEFAULT 1.0,
            split VARCHAR, config_hash VARCHAR, created_at TIMESTAMP, PRIMARY KEY (trajectory_id, filter)
        );
        CREATE TABLE filter_configs (
            filter VARCHAR PRIMARY KEY, position INTEGER, kind VARCHAR, params JSON, config_hash VARCHAR,
            updated_at TIMESTAMP
        );
        CREATE TABLE rollouts (
            task_id VARCHAR, model VARCHAR, sample_index INTEGER, completion VARCHAR, answer VARCHAR,
            correct BOOLEAN, score DOUBLE, detail VARCHAR, request_hash VARCHAR, created_at TIMESTAMP,
            PRIMARY KEY (task_id, model, sample_index)
        );
        CREATE VIEW curation AS
            SELECT trajectory_id, bool_and(keep) AS keep, product(weight) AS weight, max(split) AS split,
                   list(filter ORDER BY filter) FILTER (WHERE NOT keep) AS dropped_by,
                   list(reason ORDER BY filter) FILTER (WHERE NOT keep) AS drop_reasons
            FROM filter_verdicts GROUP BY trajectory_id;
        """,
    ),
    (
        "0008_verdicts_unindexed",
        # The (trajectory, filter) primary key cost ~0.9 s per million verdicts written (DuckDB
        # maintains the index row by row, and INSERT OR REPLACE checks every row against it): more
        # than most filters take to compute. The filter runner keeps the pair unique instead: it
        # deletes the verdicts it is about to rewrite (an unindexed delete is a cheap scan) and
        # inserts. The view is dropped and made again because it names the table.
        """
        CREATE TABLE filter_verdicts_unindexed (
            trajectory_id VARCHAR, filter VARCHAR, keep BOOLEAN, reason VARCHAR, weight DOUBLE DEFAULT 1.0,
            split VARCHAR, config_hash VARCHAR, created_at TIMESTAMP
        );
        INSERT INTO filter_verdicts_unindexed SELECT * FROM filter_verdicts;
        DROP VIEW curation;
        DROP TABLE filter_verdicts;
        ALTER TABLE filter_verdicts_unindexed RENAME TO filter_verdicts;
        CREATE VIEW curation AS
            SELECT trajectory_id, bool_and(keep) AS keep, product(weight) AS weight, max(split) AS split,
                   list(filter ORDER BY filter) FILTER (WHERE NOT keep) AS dropped_by,
                   list(reason ORDER BY filter) FILTER (WHERE NOT keep) AS drop_reasons
            FROM filter_verdicts GROUP BY trajectory_id;
        """,
    ),
    (
        "0009_tool_inputs",
        # Each row's tool inputs, parsed from its text when it is written (store/derived.py), so the
        # redundancy filter reads a list instead of parsing ~10 KB a row on every run. Rows written
        # earlier keep NULL here and are parsed by the filter, with the same expressions.
        "ALTER TABLE trajectories ADD COLUMN tool_inputs VARCHAR[]",
    ),
    (
        "0010_coa_trace_tools",
        # The tools a Chain-of-Agents run offered (`Trace.tools`), so a trace read back from the
        # store distils with the instruction the run had. Traces written earlier keep NULL and
        # count the tools their calls used (`Trace.offered_tools`).
        "ALTER TABLE coa_traces ADD COLUMN tools VARCHAR[]",
    ),
    (
        "0011_llm_batches",
        # Provider batch APIs (factory/llm/batch): each batch the provider accepted, recorded before
        # it is polled, and the custom ids it holds (a hash of the request key and the exact body), so a
        # rerun follows a batch not yet downloaded instead of submitting its requests again.
        # llm_calls.batch_id names the batch that answered a call (NULL: a plain HTTP call).
        """
        CREATE TABLE llm_batches (
            batch_id VARCHAR PRIMARY KEY, provider VARCHAR, base_url VARCHAR, state VARCHAR, requests INTEGER,
            completed INTEGER, failed INTEGER, input_file_id VARCHAR, output_file_id VARCHAR,
            error_file_id VARCHAR, results_url VARCHAR, error VARCHAR, created_at TIMESTAMP,
            updated_at TIMESTAMP, downloaded_at TIMESTAMP
        );
        CREATE TABLE llm_batch_requests (
            batch_id VARCHAR, custom_id VARCHAR, request_hash VARCHAR, PRIMARY KEY (batch_id, custom_id)
        );
        ALTER TABLE llm_calls ADD COLUMN batch_id VARCHAR;
        """,
    ),
    (
        "0012_coa_trace_steps",
        # The last plan's steps and their states (`Trace.steps`: done, dropped with a reason, or open,
        # and the calls made for each), which the stats' plan counts are read from. Traces written
        # earlier keep NULL: an empty list.
        "ALTER TABLE coa_traces ADD COLUMN steps VARCHAR",
    ),
    (
        "0013_native_tools",
        # The tools (JSON-schema functions, as JSON text) an imported native trajectory offered its agent
        # (ATIF's agent.tool_definitions, factory/interchange); NULL for rows whose tools come from their
        # script (refine) or their AFM tags (coa).
        "ALTER TABLE trajectories ADD COLUMN tools VARCHAR",
    ),
    (
        "0014_preference_pairs",
        # Preference pairs a stage generated (coa "when to act": a tool call against an answer from recall,
        # or the reverse where the model answers closed-book). prompt / chosen / rejected are JSON lists of
        # chat messages {role, content}: the shared context and the two continuations; one side NULL is a
        # KTO-only row (chosen: desirable, rejected: undesirable). evidence: JSON, why this side won.
        """
        CREATE TABLE preference_pairs (
            pair_id VARCHAR PRIMARY KEY, kind VARCHAR, source VARCHAR, task_id VARCHAR, trajectory_id VARCHAR,
            prompt VARCHAR, chosen VARCHAR, rejected VARCHAR, evidence VARCHAR, created_at TIMESTAMP
        );
        """,
    ),
]
