"""`factory eval RUN_DIR --env NAME ...`: the eval command's path for real environments.

The player is built exactly as for refine environments (`command.make_player`),
the results are written by the same code to `RUN_DIR/eval/<stamp>.json`, with
`kind: "envs"` and the names and seeds, so the report and a later comparison
can tell them apart.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from factory.errors import FactoryError
from factory.run import open_run

from ..results import write_results
from .play import evaluate_envs
from .registry import NAMES_HELP, pick_seeds, resolve_episodes


def seed_list(text: str) -> list[int]:
    """`--seeds 1,2,5-8`."""
    seeds: list[int] = []
    try:
        for piece in filter(None, (p.strip() for p in text.split(","))):
            low, dash, high = piece.partition("-")
            seeds.extend(range(int(low), int(high) + 1) if dash else [int(low)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give seeds as 1,2,5-8") from None
    if not seeds:
        raise argparse.ArgumentTypeError("give at least one seed")
    return seeds


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", action="append", metavar="NAME",
                        help=f"play a real environment instead of the run's scripts (repeatable): {NAMES_HELP}")  # fmt: skip
    parser.add_argument("--seeds", type=seed_list, help="--env: the seeds to play, e.g. 1,2,5-8 (default 1-5)")
    parser.add_argument("--episodes", type=int, help="--env: play the first N default seeds (default 5)")


def run_env_eval(args: argparse.Namespace, settings, make_player):
    """Play the named environments; (results, results path). `make_player(store, run_id)` builds the player."""
    if args.scripts or args.exclude_train:
        raise FactoryError("--env plays real environments: --scripts and --exclude-train choose refine scripts")
    seeds = pick_seeds(args.seeds, args.episodes)
    episodes = resolve_episodes(args.env, seeds)
    if settings.limit is not None:
        episodes = episodes[: settings.limit]
    with open_run(Path(args.run_dir), "eval", settings) as run:
        player = make_player(run.store, run.run_id)
        results = evaluate_envs(episodes, player, settings.max_steps, settings.concurrency, settings.loop_k, args.env)
        extra = {"run_id": run.run_id, "kind": "envs", "env": args.env, "seeds": seeds}
        path = write_results(results, args.run_dir, extra)
    return results, path
