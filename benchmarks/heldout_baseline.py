"""A model's baseline on the held-out environments: success, progress and format errors per environment.

    python benchmarks/heldout_baseline.py                                   # the embedded SmolLM2, default seeds
    python benchmarks/heldout_baseline.py --model openai/gpt-4o-mini --episodes 10
    python benchmarks/heldout_baseline.py --model outputs/sft/final --env babyai --seeds 1-20

Runs `factory eval RUN_DIR --env NAME` (the real command, in-process) once per
environment name on the same fixed seeds, and merges the overall figures into
benchmarks/results/heldout_baseline.json under a key naming the model and the
settings, so several models' baselines sit side by side.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from results_file import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factory.cli import build_parser  # noqa: E402
from factory.evaluate.envs.command import seed_list  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "heldout_baseline.json"
DEFAULT_ENVS = ("babyai", "textworld")
KEPT = ("environments", "success_rate", "progress_rate", "mean_steps", "steps", "format_errors", "format_error_rate",
        "loop_rate", "revisits", "player_errors")  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="local", help="a checkpoint folder, a .gguf, or a model string (factory.llm)"
    )
    parser.add_argument("--base-url")
    parser.add_argument("--env", action="append", help=f"environment names (default: {', '.join(DEFAULT_ENVS)})")
    parser.add_argument("--seeds", type=seed_list, help="seeds, e.g. 1-3 (default: the first --episodes)")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    # The embedded server decodes 4 requests together (llm.n_parallel): more would queue into timeouts on a small CPU.
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--run-dir", help="keep the results here (default: a temporary folder)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args()


def eval_argv(args: argparse.Namespace, run_dir: str, env: str) -> list[str]:
    argv = ["eval", run_dir, "--env", env, "--model", args.model, "--max-steps", str(args.max_steps),
            "--max-new-tokens", str(args.max_new_tokens), "--concurrency", str(args.concurrency)]  # fmt: skip
    if args.base_url:
        argv += ["--base-url", args.base_url]
    if args.seeds:
        argv += ["--seeds", ",".join(map(str, args.seeds))]
    else:
        argv += ["--episodes", str(args.episodes)]
    return argv


def measure(args: argparse.Namespace, run_dir: str, env: str) -> dict:
    from factory.evaluate.command import run_eval

    parsed = build_parser().parse_args(eval_argv(args, run_dir, env))
    started = time.perf_counter()
    results, path = run_eval(parsed)
    overall = results.overall
    figures = {key: round(overall[key], 3) if isinstance(overall[key], float) else overall[key] for key in KEPT}
    figures["seconds"] = round(time.perf_counter() - started, 1)
    return {**figures, "results_file": str(path)} if args.run_dir else figures  # a temporary folder is gone after


def main() -> None:
    args = parse_args()
    run_dir = args.run_dir or tempfile.mkdtemp(prefix="heldout-baseline-")
    seeds = f"seeds {','.join(map(str, args.seeds))}" if args.seeds else f"{args.episodes} episodes"
    key = f"{args.model} | {seeds} | max_steps {args.max_steps} | max_new_tokens {args.max_new_tokens}"
    print(f"{key}: {', '.join(args.env or DEFAULT_ENVS)} into {run_dir}", flush=True)
    figures = {env: measure(args, run_dir, env) for env in args.env or DEFAULT_ENVS}
    report(args.output, key, figures)


if __name__ == "__main__":
    main()
