"""Held-out environments no one here wrote: BabyAI (minigrid) and TextWorld, played as text.

    from factory.evaluate.envs import resolve_episodes, evaluate_envs
    results = evaluate_envs(resolve_episodes(["babyai", "textworld:cooking"]), player, max_steps=20)

base.py is the interface and the reply parser, babyai.py / babyai_view.py and
textworld_env.py the games, registry.py the names `factory eval --env` takes,
play.py the loop. Needs the [envs] extra (minigrid, textworld); docs/eval.md.
"""

from .base import EnvEpisode, Measure, StepOutcome, TextEnv, parse_command
from .play import evaluate_envs, evaluate_envs_async, play_env_episode
from .registry import resolve_episodes

__all__ = [
    "EnvEpisode", "Measure", "StepOutcome", "TextEnv", "evaluate_envs", "evaluate_envs_async", "parse_command",
    "play_env_episode", "resolve_episodes",
]  # fmt: skip
