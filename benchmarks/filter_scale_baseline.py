"""The baseline for benchmarks/filter_scale.py: the same filter logic as a plain Python loop.

Rows are fetched in batches (only the columns the filters read, joined with the
trace question and the script task, as any Python pipeline would read them) and
judged one by one: json.loads of the stats, the tool inputs as stored with the
row (parsed by regular expression / JSON for rows written without), MinHash LSH for near-duplicate tasks with the same bands and
threshold, per-task pass rates from the rollouts. The verdicts are written into
`filter_verdicts` (as `python:<filter>`) in one Arrow insert, as the SQL filters write theirs.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter, defaultdict
from itertools import combinations

import pyarrow as pa

PRIME = 4294967311
TOOL_PATTERNS = [re.compile(f"<{tag}>(.*?)</{tag}>", re.S) for tag in ("web_search", "crawl_page", "code")]
NOT_WORD = re.compile(r"[\W_]+")

COLUMNS = ("trajectory_id", "source", "stats", "n_turns", "n_corrections", "verified", "correct", "task_id",
           "persona_id", "script_id", "created_at", "tool_inputs", "completion", "turns", "question", "domain",
           "script")  # fmt: skip
# The texts are fetched only for rows without stored tool inputs (written before migration 0009).
ROWS_SQL = """
SELECT t.trajectory_id, t.source, t.stats, t.n_turns, t.n_corrections, t.verified, t.correct, t.task_id,
       t.persona_id, t.script_id, t.created_at, t.tool_inputs, CASE WHEN t.tool_inputs IS NULL THEN t.completion END,
       CASE WHEN t.tool_inputs IS NULL AND t.completion IS NULL THEN t.turns END,
       c.question, c.domain, s.script
FROM trajectories t LEFT JOIN coa_traces c ON c.trace_id = t.trace_id LEFT JOIN scripts s ON s.script_id = t.script_id
WHERE hash(t.trajectory_id) % {step} = 0
"""


def normalise(text: str) -> str:
    return NOT_WORD.sub(" ", text.lower()).strip()


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def tool_inputs(row: dict) -> list[str]:
    if row["tool_inputs"] is not None:
        return row["tool_inputs"]
    if row["completion"] is not None:
        return [text for pattern in TOOL_PATTERNS for text in pattern.findall(row["completion"])]
    try:
        turns = json.loads(row["turns"] or "null") or []
    except json.JSONDecodeError:
        return []
    return [
        t["content"].split("Action:", 1)[1].strip()
        for t in turns
        if t.get("role") == "assistant" and "Action:" in t.get("content", "")
    ]


def redundant(row: dict, similarity: float) -> bool:
    norms = [n for n in (normalise(x) for x in tool_inputs(row) if x) if n]
    if any(count > 1 for count in Counter(norms).values()):
        return True
    word_sets = [set(n.split()) for n in dict.fromkeys(norms)]
    return any(jaccard(a, b) >= similarity for a, b in combinations(word_sets, 2))


def task_text(row: dict) -> str:
    if row["question"] and row["question"].strip():
        return row["question"]
    try:
        return json.loads(row["script"] or "null")["task"]
    except (json.JSONDecodeError, TypeError, KeyError):
        return ""


def row_verdicts(row: dict, stats: dict, rates: dict, repeats: bool) -> dict[str, tuple[bool, float, str | None]]:
    """(keep, weight, split) of every row filter for one row, as the built-ins decide them."""
    refine = row["source"] == "refine"
    corrections = row["n_corrections"] or 0
    failed = row["verified"] is False or row["correct"] is False
    tools = stats.get("tool_calls", stats.get("assistant_turns")) or 0
    reflections = (stats.get("reflections") or 0) + (stats.get("replans") or 0)
    n, n_ok, scores = rates.get(row["task_id"], (0, 0, set()))
    if n < 8:
        hard = True  # missing: keep
    elif row["domain"] == "code" and n_ok == n:
        hard = False
    else:
        hard = n_ok / n <= 0.3
    upsampled = bool(stats.get("low_double_check_corrected")) or (refine and corrections >= 1)
    key = row["task_id"] or row["persona_id"] or row["script_id"] or row["trajectory_id"]
    point = (int(hashlib.md5(key.encode()).hexdigest(), 16) % 1_000_000) / 1_000_000
    return {
        "correct": (not failed, 1.0, None),
        "complex": (tools >= 5, 1.0, None),
        "reflects": (corrections >= 1 if refine else reflections >= 1, 1.0, None),
        "no_repeats": (not repeats, 1.0, None),
        "hard": (hard, 1.0, None),
        "upsample": (True, 2.0 if upsampled else 1.0, None),
        "split": (True, 1.0, "sft" if point < 0.8 else "rl"),
    }


def load_rates(store) -> dict:
    counts: dict = defaultdict(lambda: [0, 0, set()])
    rollouts = "SELECT task_id, correct, score FROM rollouts WHERE model = 'policy'"
    for task_id, correct, score in fetch_rows(store, rollouts):
        if correct is not None:
            entry = counts[task_id]
            entry[0] += 1
            entry[1] += bool(correct)
            entry[2].add(score if score is not None else float(correct))
    return {task: tuple(entry) for task, entry in counts.items()}


def minhash_bands(shingles: set, perms: list[tuple[int, int]], rows_per_band: int) -> list[int]:
    mins = [min((a * h + b) % PRIME for h in shingles) for a, b in perms]
    return [hash(tuple(mins[i : i + rows_per_band])) for i in range(0, len(mins), rows_per_band)]


def dedup(docs: list[tuple], threshold: float = 0.8, bands: int = 6, rows_per_band: int = 2) -> set[str]:
    """Ids dropped as exact or near duplicates; docs are (created_at, id, normalised text)."""
    docs.sort(key=lambda d: (d[0] is None, d[0], d[1]))
    dropped, firsts = set(), {}
    for _, tid, norm in docs:
        if norm in firsts:
            dropped.add(tid)
        else:
            firsts[norm] = tid
    rng = random.Random(0)
    perms = [(rng.randrange(1, 2**31), rng.randrange(0, 2**31)) for _ in range(bands * rows_per_band)]
    buckets: dict = defaultdict(list)
    shingle_sets = {}
    for norm, tid in firsts.items():  # in (created_at, id) order: earlier rows enter buckets first
        words = norm.split()
        grams = {hash(tuple(words[i : i + 2])) % PRIME for i in range(len(words) - 1)} or {hash(norm) % PRIME}
        shingle_sets[tid] = grams
        candidates = set()
        for band, key in enumerate(minhash_bands(grams, perms, rows_per_band)):
            members = buckets[(band, key)]
            candidates.update(members[-100:])
            members.append(tid)
        if any(jaccard(grams, shingle_sets[other]) >= threshold for other in candidates):
            dropped.add(tid)
    return dropped


def fetch_rows(store, sql: str, batch_rows: int = 10_000):
    """Rows as tuples, streamed in Arrow batches (a materialised result would not fit the memory limit)."""
    # The sampling predicate makes DuckDB guess ~1 row and hash the trajectories side: keep the small tables there.
    store.duck_execute("SET disabled_optimizers = 'join_order,build_side_probe_side'")
    for batch in store.arrow_batches(sql, batch_rows):
        yield from zip(*(column.to_pylist() for column in batch.columns))


def run_baseline(store, n: int, cap: int, filters: list[dict]) -> dict:
    step = max(1, -(-n // cap))  # every step-th row by hash: a subset spread over the whole table
    started = time.perf_counter()
    clock: dict[str, float] = defaultdict(float)  # where the time goes: fetch, redundancy, dedup, write
    rates = load_rates(store)
    verdicts: dict[str, list] = defaultdict(list)
    docs, rows_seen = [], 0
    rows = fetch_rows(store, ROWS_SQL.format(step=step))
    while True:
        mark = time.perf_counter()
        values = next(rows, None)
        clock["fetch"] += time.perf_counter() - mark
        if values is None:
            break
        row = dict(zip(COLUMNS, values))
        try:
            stats = json.loads(row["stats"]) if row["stats"] else {}
        except json.JSONDecodeError:
            stats = {}
        mark = time.perf_counter()
        repeats = redundant(row, 0.9)
        clock["redundancy"] += time.perf_counter() - mark
        for name, (keep, weight, split) in row_verdicts(row, stats, rates, repeats).items():
            verdicts[name].append((row["trajectory_id"], keep, weight, split))
        docs.append((row["created_at"], row["trajectory_id"], normalise(task_text(row))))
        rows_seen += 1
    mark = time.perf_counter()
    duplicates = dedup([d for d in docs if d[2]])
    verdicts["unique"] = [(tid, tid not in duplicates, 1.0, None) for _, tid, _ in docs]
    clock["dedup (after the loop)"] = time.perf_counter() - mark
    mark = time.perf_counter()
    write_verdicts(store, verdicts)
    clock["write"] = time.perf_counter() - mark
    seconds = time.perf_counter() - started
    clock["stats filters, task text"] = seconds - sum(clock.values())
    dropped = {name: sum(1 for v in rows if not v[1]) for name, rows in verdicts.items()}
    return {"rows": rows_seen, "seconds": seconds, "extrapolated": step > 1,
            "seconds_full": seconds * n / rows_seen if step > 1 else seconds, "dropped": dropped,
            "seconds_by_part": {part: round(t, 2) for part, t in clock.items()},
            "filters": [f["name"] for f in filters]}  # fmt: skip


def write_verdicts(store, verdicts: dict[str, list]) -> None:
    ids, names, keeps, weights, splits = [], [], [], [], []
    for name, rows in verdicts.items():
        for tid, keep, weight, split in rows:
            ids.append(tid), names.append(name), keeps.append(keep), weights.append(weight), splits.append(split)
    table = pa.table({"trajectory_id": ids, "filter": names, "keep": keeps, "weight": weights, "split": splits})
    # Into the same table as the SQL filters (under other filter names), replacing the same way: the same
    # output, the same write cost.
    store.execute("DELETE FROM filter_verdicts WHERE filter LIKE 'python:%'")
    with store.arrow_view("baseline_batch", table):
        store.insert_query(
            "filter_verdicts",
            "SELECT trajectory_id, 'python:' || filter AS filter, keep, weight, split, now() AS created_at "
            "FROM baseline_batch",
        )
