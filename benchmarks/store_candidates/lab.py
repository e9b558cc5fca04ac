"""Measure one store candidate: live reads beside a writer, SIGKILL, throughput, size, query time,
full disk, several writers. Writers and readers are separate processes, as in a real run.

    python lab.py run BACKEND RESULTS.json      (orchestrates everything below)
    python lab.py writer BACKEND DIR N RATE BATCH TAG   (prints the last committed id after each commit)
    python lab.py reader BACKEND DIR SECONDS            (polls every 100 ms, prints a JSON summary)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import backends_ext  # noqa: F401  (registers DuckLake and the sqlite_scanner reader: they need duckdb 1.4.4)
from backends import BACKENDS, files, make_rows

LAB = Path(os.environ.get("STORELAB", "/tmp/storelab")) / "runs"  # scratch folders, rewritten each run
RETRYABLE = ("conflict", "lock", "busy")


def writer(backend: str, folder: str, n: int, rate: float, batch: int, tag: str) -> None:
    store = BACKENDS[backend].Writer(Path(folder))
    conflicts, start = 0, time.time()
    for first in range(0, n, batch):
        rows = make_rows(first, min(batch, n - first), tag)
        for attempt in range(20):
            try:
                store.insert(rows)
                break
            except Exception as exc:  # noqa: BLE001  (the lab records every error as it is)
                if not any(w in str(exc).lower() for w in RETRYABLE) or attempt == 19:
                    print(f"ERR {type(exc).__name__}: {str(exc).splitlines()[0][:200]}", flush=True)
                    sys.exit(1)
                conflicts += 1
                time.sleep(0.01 * (attempt + 1))
        print(rows[-1]["id"], flush=True)
        if rate:
            time.sleep(max(0.0, start + (first + batch) / rate - time.time()))
    print(f"DONE {time.time() - start:.3f} conflicts={conflicts}", flush=True)
    store.close()


def reader(backend: str, folder: str, seconds: float) -> None:
    polls, errors, first_error, lags, counts = 0, 0, None, [], []
    end = time.time() + seconds
    while time.time() < end:
        polls += 1
        try:
            count, newest = BACKENDS[backend].count(Path(folder))
            if counts and count > counts[-1]:
                lags.append(time.time() - newest)
            counts.append(count)
        except Exception as exc:  # noqa: BLE001
            errors += 1
            first_error = first_error or f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        time.sleep(0.1)
    summary = {"polls": polls, "errors": errors, "first_error": first_error, "times_saw_new_rows": len(lags),
               "final_count": counts[-1] if counts else None}  # fmt: skip
    if lags:
        summary |= {"lag_ms_p50": round(1000 * statistics.median(lags)), "lag_ms_max": round(1000 * max(lags))}
    print(json.dumps(summary))


def spawn(*args: object) -> subprocess.Popen:
    argv = [sys.executable, __file__, *map(str, args)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def fresh(backend: str, name: str) -> Path:
    folder = LAB / backend / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    BACKENDS[backend].setup(folder)
    return folder


def last_ack(lines: list[str]) -> int:
    ids = [int(x) for x in lines if x.strip().lstrip("-").isdigit()]
    return ids[-1] if ids else -1


def live(backend: str) -> dict:
    folder = fresh(backend, "live")
    read = spawn("reader", backend, folder, 9)
    time.sleep(1.5)  # the reader's first polls see an empty store
    steady = spawn("writer", backend, folder, 600, 200, 1, "s")
    steady_out = steady.communicate()[0].splitlines()
    burst = spawn("writer", backend, folder, 1000, 0, 1, "b")
    burst_out = burst.communicate()[0].splitlines()
    out = read.communicate()[0]
    summary = json.loads(out.splitlines()[-1]) if out.strip().startswith("{") else {"reader_output": out[-400:]}
    return {"reader": summary, "steady_200_per_s": steady_out[-1], "burst_1000": burst_out[-1]}


def kill(backend: str) -> dict:
    folder = fresh(backend, "kill")
    proc = spawn("writer", backend, folder, 10**6, 0, 1, "k")
    lines: list[str] = []
    # drain the pipe as it fills: a full pipe would park the writer in print(), not mid-commit
    drain = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    drain.start()
    time.sleep(2.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    drain.join()
    acked = last_ack(lines)
    return {"acknowledged_rows": acked + 1, **after_failure(backend, folder, acked)}


def after_failure(backend: str, folder: Path, acked: int) -> dict:
    try:
        count, _ = BACKENDS[backend].count(folder)
    except Exception as exc:  # noqa: BLE001
        return {"reopen_error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    check = getattr(BACKENDS[backend], "integrity", None)
    integrity = {"integrity_check": check(folder)} if check else {}
    again = spawn("writer", backend, folder, 5, 0, 1, "again")
    again_out = again.communicate()[0].splitlines()
    return {"rows_found": count, "acknowledged_rows_lost": max(0, acked + 1 - count),
            "unacknowledged_extra_rows": max(0, count - acked - 1), "writes_after_reopen": again_out[-1], **integrity}  # fmt: skip


def throughput(backend: str) -> dict:
    result = {}
    folder = fresh(backend, "single")
    proc = spawn("writer", backend, folder, 1000, 0, 1, "one")
    secs = float(proc.communicate()[0].splitlines()[-1].split()[1])
    result["single_row_commits_rows_per_s"] = round(1000 / secs)
    result["files_after_1000_single_commits"] = files(folder)[0]
    folder = fresh(backend, "bulk")
    proc = spawn("writer", backend, folder, 100_000, 0, 500, "bulk")
    secs = float(proc.communicate()[0].splitlines()[-1].split()[1])
    result["batched_500_rows_per_s"] = round(100_000 / secs)
    result["files_after_100k"], size = files(folder)
    result["mb_after_100k"] = round(size / 2**20, 1)
    times = []
    for _ in range(3):
        t = time.time()
        BACKENDS[backend].aggregate(folder)
        times.append(time.time() - t)
    result["aggregate_100k_ms_best_of_3"] = round(1000 * min(times))
    in_engine = getattr(BACKENDS[backend], "aggregate_in_sqlite", None)
    if in_engine:
        t = time.time()
        in_engine(folder)
        result["aggregate_100k_ms_in_sqlite"] = round(1000 * (time.time() - t))
    t = time.time()
    BACKENDS[backend].count(folder)
    result["reader_open_and_count_ms"] = round(1000 * (time.time() - t))
    return result


def full_disk(backend: str) -> dict:
    folder = LAB / backend / "full"
    subprocess.run(["umount", str(folder)], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)], check=True)
    try:
        BACKENDS[backend].setup(folder)
        proc = spawn("writer", backend, folder, 10**6, 0, 1, "f")
        lines = proc.communicate(timeout=300)[0].splitlines()
        return {"writer_error": lines[-1], "acknowledged_rows": last_ack(lines) + 1,
                **after_failure(backend, folder, last_ack(lines))}  # fmt: skip
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def writers(backend: str, count: int, rows: int) -> dict:
    folder = fresh(backend, f"writers{count}")
    procs = [spawn("writer", backend, folder, rows, 0, 1, f"w{i}-") for i in range(count)]
    outs = [p.communicate()[0].splitlines()[-1] for p in procs]
    try:
        total = BACKENDS[backend].count(folder)[0]
    except Exception as exc:  # noqa: BLE001
        total = f"{type(exc).__name__}: {str(exc)[:200]}"
    return {"writer_results": outs, "rows_expected": count * rows, "rows_found": total}


def run(backend: str, out: str) -> None:
    results = {"backend": backend + os.environ.get("LAB_VARIANT", "")}
    for name, step in [("live", live), ("kill", kill), ("throughput", throughput), ("full_disk", full_disk),
                       ("two_writers", lambda b: writers(b, 2, 300)), ("four_shards", lambda b: writers(b, 4, 200))]:  # fmt: skip
        t = time.time()
        try:
            results[name] = step(backend)
        except Exception as exc:  # noqa: BLE001
            results[name] = {"lab_error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        print(name, round(time.time() - t, 1), "s", json.dumps(results[name]), flush=True)
    Path(out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "writer":
        writer(args[0], args[1], int(args[2]), float(args[3]), int(args[4]), args[5])
    elif cmd == "reader":
        reader(args[0], args[1], float(args[2]))
    elif cmd == "step":  # rerun one step into an existing results file
        results = json.loads(Path(args[2]).read_text())
        results[args[1]] = {"live": live, "kill": kill, "throughput": throughput, "full_disk": full_disk}[args[1]](
            args[0]
        )
        print(args[1], json.dumps(results[args[1]]), flush=True)
        Path(args[2]).write_text(json.dumps(results, indent=2))
    else:
        run(args[0], args[1])
