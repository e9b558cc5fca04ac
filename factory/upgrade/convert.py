"""`factory store convert RUN_DIR`: a run folder of factory <= 0.37 (a DuckDB file and its call
journal) into the SQLite store.

The DuckDB file is opened read-only and each table the new schema has is copied by column name
into `factory.sqlite` under a temporary name, in one transaction; row counts are compared, then the
file is renamed into place and the old one kept as `factory.duckdb.converted`. Answers still in the
old call journal (`factory.calls.jsonl`, written before a kill) are added as the old replay added
them; attempts without an answer go to `llm_pending`, which the next LLM client counts as
interrupted calls. A conversion that stops part way leaves the old file as it was: run it again.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import FactoryError
from ..llm.rows import COLUMNS, PENDING_SQL, UPSERT_SQL
from ..store.db import OLD_STORE_FILENAME, STORE_FILENAME, Store, remove_store_files
from ..store.errors import first_line

JOURNAL_SUFFIX = ".calls.jsonl"
NOT_COPIED = {"migrations"}  # the new file records its own schema history


def convert_run_folder(run_dir: str | Path) -> dict[str, int]:
    """Convert RUN_DIR's DuckDB store; returns rows copied per table (and journal lines applied)."""
    import duckdb

    run_dir = Path(run_dir)
    old, new = run_dir / OLD_STORE_FILENAME, run_dir / STORE_FILENAME
    if new.exists():
        raise FactoryError(f"{run_dir} already has {STORE_FILENAME}: nothing to convert")
    if not old.is_file():
        raise FactoryError(f"{run_dir} has no {OLD_STORE_FILENAME} to convert")
    temp = run_dir / f".{STORE_FILENAME}.converting"
    remove_store_files(temp)  # what a conversion that stopped part way left
    try:
        source = duckdb.connect(str(old), read_only=True)
    except duckdb.Error as exc:
        raise FactoryError(f"cannot read {old} to convert it: {first_line(exc)}") from None
    try:
        with Store(temp) as target:
            counts = copy_tables(source, target)
            counts["journal answers"], counts["journal attempts"] = apply_journal(target, run_dir)
    finally:
        source.close()
    os.replace(temp, new)
    remove_store_files(temp)  # its clean-close stamp: the new name has none, so the first writer checks it
    os.replace(old, run_dir / f"{OLD_STORE_FILENAME}.converted")
    journal = run_dir / (Path(OLD_STORE_FILENAME).stem + JOURNAL_SUFFIX)
    if journal.exists():
        os.replace(journal, journal.with_name(journal.name + ".converted"))
    return counts


def copy_tables(source, target: Store) -> dict[str, int]:
    """Every table of the old file that the new schema has, by column name, in one transaction."""
    tables = [t for (t,) in source.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
    counts = {}
    with target.transaction() as con:
        for table in tables:
            columns = {row[1] for row in target.lookup(f'PRAGMA table_info("{table}")')}
            if table in NOT_COPIED or not columns:
                continue
            names = [c for (c,) in source.execute(f'SELECT column_name FROM (DESCRIBE "{table}")').fetchall()]
            names = [name for name in names if name in columns]
            rows = source.execute(f'SELECT {", ".join(names)} FROM "{table}"').fetchall()
            marks = ", ".join("?" * len(names))
            con.executemany(f'INSERT INTO "{table}" ({", ".join(names)}) VALUES ({marks})', rows)
            counts[table] = len(rows)
    for table, count in counts.items():
        (copied,) = target.lookup(f'SELECT count(*) FROM "{table}"')[0]
        if copied != count:
            raise FactoryError(f"converting table {table}: {count} rows read, {copied} written; nothing was renamed")
    return counts


def journal_events(path: Path) -> list[dict[str, Any]]:
    """The old journal's lines (its preallocated tail reads as NUL bytes; a damaged line is skipped)."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    events = []
    for line in data.split(b"\0", 1)[0].splitlines():
        try:
            entry = json.loads(line)
            if isinstance(entry, dict) and isinstance(entry.get("k"), str):
                events.append(entry)
        except ValueError:
            continue
    return events


def apply_journal(target: Store, run_dir: Path) -> tuple[int, int]:
    """Answers the old store lacked, and attempts no answer accounts for (into llm_pending)."""
    path = run_dir / (Path(OLD_STORE_FILENAME).stem + JOURNAL_SUFFIX)
    fixed: dict[str, dict[str, Any]] = {}
    tries: dict[str, int] = {}
    answers = 0
    with target.transaction() as con:
        for entry in journal_events(path):
            key, event, row = entry["k"], entry.get("e"), entry.get("row")
            row = row if isinstance(row, dict) else {}
            if event == "start":
                fixed[key] = row
            elif event == "try":
                tries[key] = tries.get(key, 0) + 1
            elif event == "answer":
                values = {**fixed.get(key, {}), **row, "request_hash": key}
                tries[key] = max(0, tries.get(key, 0) - int(_number(values.get("attempts")) or 0))
                con.execute(
                    UPSERT_SQL, [_timestamp(values.get(c)) if c.endswith("_at") else values.get(c) for c in COLUMNS]
                )
                answers += 1
        for key, count in tries.items():
            for _ in range(count):  # each try adds one attempt
                con.execute(PENDING_SQL, [key, None, json.dumps(fixed.get(key, {})), None])
    return answers, sum(tries.values())


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _timestamp(value: Any) -> Any:
    """The journal's ISO text as the store writes timestamps (so an answer already copied is not added twice)."""
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else value
    except ValueError:
        return value
