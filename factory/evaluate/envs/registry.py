"""Names for `factory eval --env NAME`: which environments, levels and seeds an evaluation plays.

    babyai                      the default BabyAI levels (DEFAULT_BABYAI)
    babyai:GoToRedBallGrey      one BabyAI level (any `BabyAI-<level>-v0` minigrid registers)
    textworld                   coin 5, treasure 5 and cooking 1 (DEFAULT_TEXTWORLD)
    textworld:cooking[:LEVEL]   one TextWorld challenge: coin (levels 1-300), treasure (1-30), cooking (1-3)

Every name is played on the same fixed seeds (`--seeds`, or the first `--episodes` of
DEFAULT_SEEDS), so two models evaluated with the same arguments play the same episodes.
"""

from __future__ import annotations

import importlib.util
from functools import partial

from factory.errors import FactoryError, MissingExtraError

from .babyai import BabyAIEnv
from .base import EnvEpisode
from .textworld_env import CHALLENGES, TextWorldEnv

DEFAULT_SEEDS = tuple(range(1, 101))
DEFAULT_EPISODES = 5
DEFAULT_BABYAI = ("GoToRedBallGrey", "GoToLocal", "PickupLoc", "OpenDoor")
DEFAULT_LEVEL = {"coin": 5, "treasure": 5, "cooking": 1}
LEVEL_RANGE = {"coin": (1, 300), "treasure": (1, 30), "cooking": (1, 3)}
DEFAULT_TEXTWORLD = tuple(DEFAULT_LEVEL.items())
FAMILIES = {"babyai": "minigrid", "textworld": "textworld"}
NAMES_HELP = "babyai, babyai:LEVEL, textworld, textworld:coin|treasure|cooking[:LEVEL]"


def require_envs_extra(family: str) -> None:
    """One line naming the extra to install, instead of an ImportError, when the environment's package is missing."""
    module = FAMILIES[family]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtraError(
            f"factory eval --env {family} needs the [envs] extra ({module} is not installed): pip install 'factory[envs]'"
        )


def pick_seeds(seeds: list[int] | None, episodes: int | None) -> list[int]:
    if seeds:
        return list(dict.fromkeys(seeds))
    count = episodes or DEFAULT_EPISODES
    if not 1 <= count <= len(DEFAULT_SEEDS):
        raise FactoryError(f"--episodes {count}: give 1 to {len(DEFAULT_SEEDS)}, or list seeds with --seeds")
    return list(DEFAULT_SEEDS[:count])


def episodes_for(name: str, seeds: list[int]) -> list[EnvEpisode]:
    """The episodes a name stands for, one per (level, seed); a bad name is one line naming the good ones."""
    family, _, rest = name.strip().partition(":")
    if family not in FAMILIES:
        raise FactoryError(f"--env {name}: unknown environment; known: {NAMES_HELP}")
    require_envs_extra(family)
    games = _babyai_levels(rest) if family == "babyai" else _textworld_games(name, rest)
    return [
        EnvEpisode(f"{family}:{':'.join(map(str, game))}:{seed}", partial(_build, family, game, seed))
        for game in games
        for seed in seeds
    ]


def _build(family: str, game: tuple, seed: int):
    return BabyAIEnv(game[0], seed) if family == "babyai" else TextWorldEnv(game[0], game[1], seed)


def _babyai_levels(rest: str) -> list[tuple]:
    import gymnasium
    import minigrid  # noqa: F401  (registers the BabyAI levels)

    levels = [rest.removeprefix("BabyAI-").removesuffix("-v0")] if rest else list(DEFAULT_BABYAI)
    for level in levels:
        if f"BabyAI-{level}-v0" not in gymnasium.registry:
            raise FactoryError(f"--env babyai:{level}: minigrid has no BabyAI-{level}-v0 (e.g. GoToRedBallGrey)")
    return [(level,) for level in levels]


def _textworld_games(name: str, rest: str) -> list[tuple]:
    if not rest:
        return list(DEFAULT_TEXTWORLD)
    kind, _, level_text = rest.partition(":")
    if kind not in CHALLENGES:
        raise FactoryError(f"--env {name}: TextWorld challenges are {', '.join(CHALLENGES)}")
    try:
        level = int(level_text) if level_text else DEFAULT_LEVEL[kind]
    except ValueError:
        raise FactoryError(f"--env {name}: the level must be a whole number") from None
    low, high = LEVEL_RANGE[kind]
    if not low <= level <= high:
        raise FactoryError(f"--env {name}: {kind} levels run from {low} to {high}")
    return [(kind, level)]


def resolve_episodes(names: list[str], seeds: list[int] | None = None, episodes: int | None = None) -> list[EnvEpisode]:
    """Every episode of every name, in the order given; the same episode named twice plays once."""
    chosen = pick_seeds(seeds, episodes)
    found = {e.env_id: e for name in names for e in episodes_for(name, chosen)}
    return list(found.values())
