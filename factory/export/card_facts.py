"""What the dataset card says about how the data was made, read from the run's store."""

from __future__ import annotations

import json
from typing import Any

from ..store import Store
from .formats import OBSERVATION, SAYS_SOMETHING, TURNS_TYPE

PROMPTS_PER_STAGE = 3  # fingerprints listed per stage; the rest are counted


def rows_by_source(store: Store) -> list[tuple]:
    return store.query(
        "SELECT source, count(*), count(*) FILTER (verified), count(*) FILTER (verified AND correct) "
        "FROM trajectories GROUP BY 1 ORDER BY 1"
    )


def filter_configs(store: Store) -> list[tuple]:
    return store.query("SELECT filter, kind, params, config_hash FROM filter_configs ORDER BY position, filter")


def upsampling(store: Store) -> list[tuple]:
    """Per upsample filter: its name, params (JSON), the verified rows it reweighted, and those of them every filter keeps."""
    return store.query(
        "SELECT c.filter, c.params, count(*) FILTER (v.weight <> 1 AND t.verified), "
        "count(*) FILTER (v.weight <> 1 AND t.verified AND k.keep) FROM filter_configs c "
        "LEFT JOIN filter_verdicts v USING (filter) LEFT JOIN trajectories t USING (trajectory_id) "
        "LEFT JOIN curation k USING (trajectory_id) WHERE c.kind = 'upsample' GROUP BY c.filter, c.params, c.position "
        "ORDER BY c.position"
    )


def filter_drops(store: Store, limit: int = 12) -> tuple[list[tuple], list[tuple]]:
    """Drops per filter (judged, dropped, weighted), and the commonest drop reasons."""
    per_filter = store.query(
        "SELECT filter, count(*), count(*) FILTER (NOT keep), count(*) FILTER (keep AND weight <> 1) "
        "FROM filter_verdicts GROUP BY 1 ORDER BY 1"
    )
    reasons = store.query(
        "SELECT filter, reason, count(*) FROM filter_verdicts WHERE NOT keep GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 "
        f"LIMIT {limit}"
    )
    return per_filter, reasons


def model_usage(store: Store) -> list[tuple]:
    """Calls, tokens and cost per stage and model (every attempt the log kept, failures included)."""
    return store.query(
        "SELECT stage, provider, model, count(*), count(*) FILTER (status = 'ok'), coalesce(sum(prompt_tokens), 0), "
        "coalesce(sum(completion_tokens), 0), sum(cost_usd), coalesce(sum(cache_hits), 0) "
        "FROM llm_calls GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    )


def prompt_fingerprints(store: Store) -> list[tuple[str, str, int]]:
    """Per stage, a short sha256 of each distinct system prompt sent: the prompt versions used."""
    rows = store.query(
        "SELECT stage, left(sha256(json_extract_string(messages, '$[0].content')), 12) AS fp, count(*) "
        "FROM llm_calls WHERE json_extract_string(messages, '$[0].role') = 'system' "
        "GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2"
    )
    shown: dict[str, int] = {}
    out = []
    for stage, fingerprint, calls in rows:
        shown[stage] = shown.get(stage, 0) + 1
        if shown[stage] <= PROMPTS_PER_STAGE:
            out.append((stage, fingerprint, calls))
    return out


def runs(store: Store) -> list[tuple]:
    """Each command run against the folder, with the model settings its config recorded."""
    return store.query(
        "SELECT command, started_at, status, json_extract_string(config, '$.llm.model'), "
        "json_extract_string(config, '$.llm.temperature'), json_extract_string(config, '$.llm.max_tokens') "
        "FROM runs ORDER BY started_at, run_id"
    )


def sample_rows(store: Store, files: list[str], file_type: str, n: int = 1) -> list[dict[str, Any]]:
    """The first rows of a written shard, read back by DuckDB (JSON lines as written: a reader that
    unifies their shapes would show keys a row does not have)."""
    if file_type != "parquet":
        with open(files[0], encoding="utf-8") as handle:
            return [json.loads(line) for line, _ in zip(handle, range(n))]
    reader = "read_parquet"
    rows = store.query(f"SELECT to_json(r) FROM (SELECT * FROM {reader}(?) LIMIT {n}) r", [files])
    return [json.loads(text) for (text,) in rows]


def observation_counts(store: Store, selection: str, splits: list[str]) -> tuple[int, int]:
    """Over the exported rows of `splits`: the observations that answer an action and say something (what
    `--observations train` puts in the loss, formats.OBSERVATION), and how many of them answer a mistake
    (the world's refusal of a wrong action)."""
    if not splits:
        return 0, 0
    names = ", ".join(f"'{split}'" for split in splits)  # checked split names (selection.SPLIT_NAME)
    rows = store.query(f"""
        SELECT coalesce(count(*) FILTER (o.seen), 0), coalesce(count(*) FILTER (o.seen AND o.refusal), 0)
        FROM (SELECT unnest(list_transform(t, lambda x, i: struct_pack(
                  seen := {OBSERVATION} AND {SAYS_SOMETHING},
                  refusal := i > 1 AND t[i - 1].role = 'assistant' AND t[i - 1].error IS NOT NULL))) AS o
              FROM (SELECT from_json(turns, '{TURNS_TYPE}') AS t FROM ({selection})
                    WHERE turns IS NOT NULL AND split IN ({names})))""")
    return rows[0][0], rows[0][1]
