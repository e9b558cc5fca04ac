"""Does one DuckDB session held open (as a user's CLI or notebook would be) see a live run's SQLite
store grow? A writer commits 400 rows at 200/s; the held connection counts them every 100 ms.
Needs duckdb 1.4.4 + duckdb-ext-sqlite (the sqlite_scanner package exists for no 2.x release).

    /tmp/storelab/venv14/bin/python held_reader.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from backends import SqliteWal
from backends_ext import SqliteViaDuckdb
from lab import LAB


def main() -> None:
    folder = LAB / "held"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    SqliteWal.setup(folder)
    con = SqliteViaDuckdb._duck(folder)
    lab = str(Path(__file__).with_name("lab.py"))
    writer = subprocess.Popen(
        [sys.executable, lab, "writer", "sqlite_wal", str(folder), "400", "200", "1", "h"], stdout=subprocess.DEVNULL
    )
    seen, start = [], time.time()
    while writer.poll() is None:
        t = time.time()
        count = con.execute("SELECT count(*) FROM run.calls").fetchone()[0]
        seen.append((round(t - start, 2), count, round(1000 * (time.time() - t), 1)))
        time.sleep(0.1)
    final = con.execute("SELECT count(*) FROM run.calls").fetchone()[0]
    summary = {"seconds_rows_query_ms": seen[::4], "query_ms_max": max(s[2] for s in seen), "final": final}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
