"""Yield of the AgentRefine path on a given model: what a verified trajectory costs.

    python benchmarks/refine_yield.py                              # embedded SmolLM2, 4 personas, --dm world
    python benchmarks/refine_yield.py --count 8 --dm llm --budget 4
    python benchmarks/refine_yield.py --model openai/gpt-4o-mini --count 20 --with-code
    python benchmarks/refine_yield.py --replay benchmarks/data/refine_replay/capable_v1   # recorded capable model

Runs `factory refine` in-process into a fresh run folder (cache off unless
--cache) and reads the store afterwards:

- LLM calls per verified trajectory (the paper's budget is 4 per saved one,
  script included) and per attempted persona;
- verified / attempted yield, and the whole funnel;
- prompt + completion tokens and wall seconds per verified trajectory;
- the share of failed verifier verdicts lost at each rule (every attempt counts),
  and why scripts failed verification (every attempt counts);
- the quality of the verified trajectories (`factory.refine.quality`): whether the
  last action completes the task, where the first mistake falls, error-type mix,
  mistakes per row, whether the first move trains, distinct actions per row,
  repeated or templated mistake thoughts, diversity across environments;
- inside each row (`factory.refine.quality_rows`, key `inside_rows`): slip kinds and
  how many hold more than 10%, injected steps answered with a world template, fact
  ids in observations, repeated moves and thoughts, observation skeletons, arcs.

With --replay DIR the model is a recorded set of capable-model replies served over
loopback HTTP (tests/refine_replay.py): its own personas, the LLM as DM and no
validation code unless told otherwise, as the set was written (see its README);
tokens are then estimates (4 characters a token) and seconds measure the factory alone.

Figures are printed and merged into benchmarks/results/refine_yield.json under
a key naming the model and settings, so runs on several models sit side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from results_file import per, report, timed_run

from factory.refine.batch import run_refine
from factory.refine.quality import refine_quality
from factory.refine.quality_rows import row_quality
from factory.run_config import FactoryConfig
from factory.store import Store

RESULTS = Path(__file__).parent / "results" / "refine_yield.json"
TESTS = Path(__file__).parent.parent / "tests"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="litellm model string, or local / local:/path.gguf")
    parser.add_argument("--base-url")
    parser.add_argument("--count", type=int, default=4, help="personas (one trajectory each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=4, help="LLM calls per trajectory, script included")
    parser.add_argument("--dm", choices=["llm", "world"], help="who judges moves (default: world; llm with --replay)")
    parser.add_argument("--with-code", action="store_true", help="ask for validation code (needs a capable model)")
    parser.add_argument("--no-injection", action="store_true")
    parser.add_argument("--cache", action="store_true", help="reuse cached calls (default: every call is fresh)")
    parser.add_argument("--run-dir", help="keep the run here (default: a temporary folder)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--replay", type=Path, help="serve this recorded set of replies instead of a model")
    parser.add_argument("--pending", type=Path, help="with --replay: write requests the set cannot answer here")
    args = parser.parse_args()
    args.dm = args.dm or ("llm" if args.replay else "world")
    return args


def build_config(args: argparse.Namespace, run_dir: str, personas: Path | None = None) -> FactoryConfig:
    llm = {"model": args.model, "cache": args.cache, **({"base_url": args.base_url} if args.base_url else {})}
    refine = {"count": args.count, "seed": args.seed, "budget": args.budget, "dm_evaluation": args.dm,
              "with_code": args.with_code, "injection": not args.no_injection}  # fmt: skip
    if personas:
        refine["personas"] = str(personas)
    return FactoryConfig.model_validate({"run_dir": run_dir, "llm": llm, "refine": refine})


SCRIPT_PROBLEM_KINDS = (  # (substring of the stored problem, kind) — first match wins
    ("schema", "schema or dangling names"),
    ("reaches the goal", "unsolvable"),
    ("declare the goal", "no goal"),
    ("already holds", "goal holds at start"),
    ("llm", "llm error"),
)


def script_problem_kinds(store: Store) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for (problems,) in store.query("SELECT problems FROM scripts WHERE NOT verified"):
        first = (json.loads(problems) or ["unknown"])[0] if problems else "unknown"
        kind = next((k for needle, k in SCRIPT_PROBLEM_KINDS if needle in first), "validation code")
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def measure(store: Store, funnel: dict[str, int], losses: dict[str, int], seconds: float) -> dict:
    calls, prompt_tokens, completion_tokens = store.query(
        "SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0) FROM llm_calls"
    )[0]
    verified, attempted = funnel["verified"], funnel["personas"]
    failed = sum(losses.values())
    return {
        "funnel": funnel,
        "yield_verified_per_attempted": round(verified / attempted, 3) if attempted else None,
        "llm_calls": calls,
        "llm_calls_per_verified": per(calls, verified),
        "llm_calls_per_attempted": per(calls, attempted),
        "paper_budget_calls_per_saved": 4,
        "tokens": {"prompt": prompt_tokens, "completion": completion_tokens},
        "tokens_per_verified": per(prompt_tokens + completion_tokens, verified),
        "seconds": round(seconds, 1),
        "seconds_per_verified": per(seconds, verified),
        "failed_verdicts": failed,
        "share_lost_by_rule": {rule: round(n / failed, 3) for rule, n in losses.items()},
        "failed_scripts_by_problem": script_problem_kinds(store),
        "quality": refine_quality(store),
        "inside_rows": row_quality(store),  # issue 26: slip kinds, DM lines, repeats, skeletons, arcs, grounding
    }


def settings_key(args: argparse.Namespace) -> str:
    return (
        f"{args.model} dm={args.dm} code={args.with_code} injection={not args.no_injection} "
        f"budget={args.budget} count={args.count} seed={args.seed}"
    )


def run_replay(args: argparse.Namespace) -> tuple[str, dict]:
    """Serve the recorded set on loopback HTTP and run `factory refine` against it."""
    sys.path.insert(0, str(TESTS))
    from refine_replay import ReplayServer, load_replay_set, write_personas

    recordings = load_replay_set(args.replay)
    server = ReplayServer(recordings, pending_dir=args.pending)
    args.model, args.base_url, args.count = "replay", server.start_in_thread(), len(recordings)
    try:
        with tempfile.TemporaryDirectory() as folder:
            personas = write_personas(recordings, Path(folder) / "personas.jsonl")
            figures = measure_run(args, personas)
    finally:
        server.stop()
    figures["replay_missing_replies"] = len(server.missing)
    figures["tokens_are_estimates"] = True
    return f"replay:{args.replay.name} " + settings_key(args).split(" ", 1)[1], figures


def measure_run(args: argparse.Namespace, personas: Path | None = None) -> dict:
    def run(run_dir: str):
        return run_refine(build_config(args, run_dir, personas), progress=True)

    def measured(store: Store, outcome, seconds: float) -> dict:
        return measure(store, outcome.funnel, outcome.rule_losses, seconds)

    return timed_run(args.run_dir, "refine_yield_", run, measured)


def main() -> None:
    args = parse_args()
    key, figures = run_replay(args) if args.replay else (settings_key(args), measure_run(args))
    report(args.output, key, figures)


if __name__ == "__main__":
    main()
