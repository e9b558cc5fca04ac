"""What every held-out environment gives the loop, and how a reply becomes a command.

An environment here is a real game (BabyAI, TextWorld) behind a text interface:
`reset()` opens an episode and returns the opening observation, `step(command)`
plays one canonical command, `resolve(text)` maps the player's text to one of
the commands available now (None: not an available action, which AgentBoard and
we count as a format error), and `measure()` says how far the goal still is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Protocol

# The first `Action:` line; the refine path's call syntax `take(item=coin)` is read as `take coin`.
_ACTION_LINE = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(?P<text>.+?)[ \t]*$", re.M)
_CALL = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_ -]*?)\s*\((?P<args>.*)\)$")


@dataclass
class StepOutcome:
    observation: str
    done: bool  # the game ended (won, lost, or its own step budget ran out)
    won: bool


@dataclass
class Measure:
    distance: int | None  # steps the environment's own solver still needs; None: it cannot reach the goal
    progress: float  # in [0, 1]: how much of the task is done now


class TextEnv(Protocol):
    env_id: str
    task: str  # known once reset() has run
    actions_text: str  # the action set as the first turn lists it
    initial_distance: int | None  # the solver's steps from the start, once reset() has run

    def reset(self) -> str: ...
    def step(self, command: str) -> StepOutcome: ...
    def resolve(self, text: str) -> str | None: ...
    def available(self) -> str: ...  # the commands available now, for a format-error observation
    def measure(self) -> Measure: ...
    def state_key(self) -> tuple: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class EnvEpisode:
    """One held-out episode: an id and how to build its environment (built in a worker thread)."""

    env_id: str
    make: Callable[[], TextEnv]


def parse_command(reply: str) -> str | None:
    """The first `Action:` line as a lower-case command, or None when the reply has none."""
    match = _ACTION_LINE.search(reply)
    if match is None:
        return None
    text = match["text"].strip().strip("`").rstrip(".").strip()
    call = _CALL.match(text)
    if call:  # name(key=value, ...) -> "name value ..."
        values = [piece.partition("=")[2] or piece for piece in call["args"].split(",") if piece.strip()]
        text = " ".join([call["name"].replace("_", " "), *(v.strip().strip("'\"") for v in values)])
    return normalize(text) or None


def normalize(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").split())


def progress_between(initial: int | None, remaining: int | None) -> float:
    """1 - remaining / initial, clipped; 0 when either is unknown."""
    if not initial or remaining is None:
        return 0.0
    return min(1.0, max(0.0, 1.0 - remaining / initial))
