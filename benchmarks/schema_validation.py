"""CPU per structured reply checked against a per-script JSON schema (refine's replies), before and after
the validator is compiled once per schema (issue 31).

    python benchmarks/schema_validation.py                 # 20 procedural scripts, 200 replies each
    python benchmarks/schema_validation.py --scripts 5 --replies 1000

Refine asks each world's moves under a schema built for that world (factory/refine/schemas.py): a new
schema per script, then many replies checked against it. Both ways run in this process on the same
replies, interleaved script by script so the machine's load hits them alike:

- before: `jsonschema.validate(reply, schema)`, what OutputSpec.check called until now (it checks the
  schema against its metaschema and builds a new validator on every reply);
- after: `OutputSpec.check`, the validator compiled when the spec is first made.

Also timed: making a spec for a new schema (the metaschema check, once per script). The replies are
valid trajectories for each script (every move of its shortest plan), plus one invalid reply per ten,
so the error path is measured too and both ways must agree on which replies fail.
Writes benchmarks/results/schema_validation.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jsonschema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.results_file import report  # noqa: E402
from factory.llm.structured import OutputInvalid, _spec_for_schema, output_spec  # noqa: E402
from factory.refine.procedural import build_script  # noqa: E402
from factory.refine.schemas import to_wire, trajectory_schema  # noqa: E402
from factory.refine.solvable import shortest_plan  # noqa: E402


def replies_for(script, count: int) -> list[dict]:
    steps = [
        to_wire({"thought": "That is the next thing the goal needs.", "action": {"name": name, "params": params},
                 "dm_thinking": "The move is allowed here.", "observation": "It works.",
                 "evaluation": {"error": "none", "task_done": False}})
        for name, params in shortest_plan(script)
    ][:10]  # fmt: skip
    good = {"steps": (steps * 3)[: max(3, len(steps))]}
    bad = {"steps": [{**good["steps"][0], "action": "fly to the moon"}]}
    return [bad if i % 10 == 9 else good for i in range(count)]


def timed(check, replies) -> tuple[float, int]:
    failed, started = 0, time.process_time()
    for reply in replies:
        failed += not check(reply)
    return time.process_time() - started, failed


def before(schema):
    def check(reply) -> bool:
        try:
            jsonschema.validate(reply, schema)
            return True
        except jsonschema.ValidationError:
            return False

    return check


def after(spec):
    def check(reply) -> bool:
        try:
            spec.check(reply)
            return True
        except OutputInvalid:
            return False

    return check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", type=int, default=20)
    parser.add_argument("--replies", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results/schema_validation.json")
    args = parser.parse_args()
    old, new, spec_ms = [], [], []
    for index in range(args.scripts):
        script = build_script(f"p{index}", f"a persona who keeps bees, number {index}", seed=index)
        schema = trajectory_schema(script, min_steps=1, max_steps=30)
        replies = replies_for(script, args.replies)
        started = time.process_time()
        _spec_for_schema.cache_clear()
        spec = output_spec(schema)  # the metaschema check and the compiled validator: once per script
        spec_ms.append((time.process_time() - started) * 1e3)
        (old_s, old_failed), (new_s, new_failed) = timed(before(spec.schema), replies), timed(after(spec), replies)
        if old_failed != new_failed or old_failed != args.replies // 10:
            raise SystemExit(f"script {index}: {old_failed} (before) and {new_failed} (after) replies failed, "
                             f"not the {args.replies // 10} invalid ones")  # fmt: skip
        old.append(old_s / len(replies) * 1e3)
        new.append(new_s / len(replies) * 1e3)
    figures = {
        "scripts": args.scripts,
        "replies_per_script": args.replies,
        "ms_per_reply_before": round(statistics.median(old), 4),
        "ms_per_reply_after": round(statistics.median(new), 4),
        "speedup": round(statistics.median(old) / statistics.median(new), 1),
        "ms_per_new_schema": round(statistics.median(spec_ms), 3),
    }
    report(args.out, "current", figures)  # printed, and saved beside earlier entries
    return 0


if __name__ == "__main__":
    sys.exit(main())
