"""Gather the per-candidate results into one JSON, with the machine and versions they ran on."""

import json
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(os.environ.get("STORELAB", "/tmp/storelab")) / "results"
out = {
    "machine": f"{platform.node()} {platform.machine()}, 2 CPU cores shared with other jobs; /tmp on local disk",
    "versions": {
        "duckdb_project": "2.0.1",
        "duckdb_for_ducklake": "1.4.4 (duckdb-ext-ducklake 1.4.4.20260205 pins it)",
        "python": platform.python_version(),
    },
    "method": "benchmarks/store_candidates/lab.py run BACKEND OUT.json; rows ~2 KB JSON (varied words); "
    "reader polls every 100 ms from its own process; SIGKILL 2 s into single-row commits; "
    "full disk = 3 MiB tmpfs; writers = separate processes, single-row commits",
    "candidates": {},
}
for path in sorted(RESULTS.glob("*.json")):
    if path.name != "store_candidates.json":
        data = json.loads(path.read_text())
        out["candidates"][data.pop("backend")] = data
out["notes"] = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else {}
print(json.dumps(out, indent=2))
