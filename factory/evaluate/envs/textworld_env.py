"""TextWorld games generated locally (tw-make) with fixed seeds, played as a text environment.

Games are generated once per (challenge, level, seed) into a cache folder
(`$FACTORY_ENVS_CACHE`, default `~/.cache/factory/envs`) and reused, so a base
model and a tuned one play the same files. Success is the game's own `won`.
Progress: cooking games give a point per recipe step (intermediate rewards), so
it is score / max_score; coin and treasure games have a single point, so it is
the distance closed along the game's own walkthrough (`policy_commands`, which
TextWorld recomputes from the current state): 1 - remaining / initial. Either
way the episode keeps the best value it reached (AgentBoard's progress rate).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

from factory.errors import FactoryError

from .base import Measure, StepOutcome, normalize, progress_between

CHALLENGES = {"coin": "tw-coin_collector", "treasure": "tw-treasure_hunter", "cooking": "tw-cooking"}
# Cooking difficulty: tw-make's recipe options per level; `--split test` draws the food held out of its training split.
COOKING_LEVELS = {
    1: ["--recipe", "1", "--take", "1", "--go", "1"],
    2: ["--recipe", "2", "--take", "2", "--go", "6", "--open", "--cook"],
    3: ["--recipe", "3", "--take", "3", "--go", "9", "--open", "--cook", "--cut"],
}
_STATUS_BAR = re.compile(r"\n\s*>.*", re.S)  # the interpreter's prompt and status line after the text
_BLANKS = re.compile(r"\n\s*\n+")
# The Z-machine interpreter is a C library; games are cheap to step, so they step one at a time.
_INTERPRETER = threading.Lock()


def cache_dir() -> Path:
    return Path(os.environ.get("FACTORY_ENVS_CACHE") or Path.home() / ".cache" / "factory" / "envs")


def generation_args(kind: str, level: int) -> list[str]:
    if kind == "cooking":
        if level not in COOKING_LEVELS:
            raise FactoryError(f"textworld:cooking:{level}: cooking levels are {', '.join(map(str, COOKING_LEVELS))}")
        return [CHALLENGES[kind], *COOKING_LEVELS[level], "--split", "test"]
    return [CHALLENGES[kind], "--level", str(level)]


def game_file(kind: str, level: int, seed: int, folder: Path | None = None) -> Path:
    """The compiled game for (challenge, level, seed), generated with tw-make the first time."""
    folder = folder or cache_dir()
    path = folder / f"{kind}-l{level}-s{seed}.z8"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{path.stem}.{os.getpid()}.z8"  # renamed when complete: a killed run leaves no half game
    tw_make = Path(sys.executable).parent / "tw-make"
    command = [sys.executable, str(tw_make), *generation_args(kind, level), "--seed", str(seed),
               "--output", str(partial), "-f", "--silent"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not partial.exists():
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise FactoryError(f"tw-make {kind} level {level} seed {seed} failed: {last[0]}")
    for extra in (".json", ".ni"):  # tw-make writes the game's metadata beside it
        sibling = partial.with_suffix(extra)
        if sibling.exists():
            sibling.replace(path.with_suffix(extra))
    partial.replace(path)
    return path


def clean(text: str) -> str:
    """The game's text without the interpreter's prompt, status bar and runs of blank lines."""
    return _BLANKS.sub("\n", _STATUS_BAR.sub("", text or "")).strip()


class TextWorldEnv:
    def __init__(self, kind: str, level: int, seed: int, folder: Path | None = None):
        self.kind, self.level, self.seed, self.folder = kind, level, seed, folder
        self.env_id = f"textworld:{kind}:{level}:{seed}"
        self.task = ""
        self.actions_text = "- any of the commands the observation lists as available (e.g. go north, take coin)"
        self._env = self._state = None
        self._initial: int | None = None

    def reset(self) -> str:
        import textworld

        infos = textworld.EnvInfos(admissible_commands=True, policy_commands=True, max_score=True, score=True,
                                   objective=True, won=True, lost=True, description=True, inventory=True)  # fmt: skip
        path = game_file(self.kind, self.level, self.seed, self.folder)
        with _INTERPRETER, warnings.catch_warnings():
            # jericho warns that it has no score table for generated games; TextWorld keeps the score itself.
            warnings.simplefilter("ignore")
            self._env = textworld.start(str(path), request_infos=infos)
            self._state = self._env.reset()
        self.task = clean(self._state.objective)
        self._initial = len(self._state.policy_commands or [])
        return self._with_commands(f"{clean(self._state.description)}\n{clean(self._state.inventory)}")

    def _with_commands(self, text: str) -> str:
        return f"{text}\nAvailable actions: {self.available()}."

    def available(self) -> str:
        return ", ".join(self._commands())

    def _commands(self) -> list[str]:
        # examine/look/inventory stay available: a player may want them; TextWorld lists them too.
        return list(self._state.admissible_commands or [])

    def resolve(self, text: str) -> str | None:
        wanted = normalize(text)
        return next((c for c in self._commands() if normalize(c) == wanted), None)

    def step(self, command: str) -> StepOutcome:
        with _INTERPRETER:
            self._state, _, done = self._env.step(command)
        won, lost = bool(self._state.won), bool(self._state.lost)
        text = clean(self._state.feedback)
        if done or won or lost:
            return StepOutcome(text, True, won)
        return StepOutcome(self._with_commands(text), False, False)

    def measure(self) -> Measure:
        state = self._state
        remaining = None if state.lost else len(state.policy_commands or [])
        if state.won:
            return Measure(0, 1.0)
        if (state.max_score or 0) > 1:
            return Measure(remaining, min(1.0, max(0.0, (state.score or 0) / state.max_score)))
        return Measure(remaining, progress_between(self._initial, remaining))

    @property
    def initial_distance(self) -> int | None:
        return self._initial

    def state_key(self) -> tuple:
        return clean(self._state.description), clean(self._state.inventory)

    def close(self) -> None:
        if self._env is not None:
            with _INTERPRETER:
                self._env.close()
