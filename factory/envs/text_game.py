"""The text game: a refine world as its player reads and writes it.

A policy trained on refine trajectories (`factory.refine.output.build_trajectory`) knows one
conversation: a first user turn from `prompts/refine/player_instruction.md` (the task, the actions,
the opening observation), then assistant turns `Thought: ...\\nAction: name(key=value, ...)`
(`world.format_action`) answered by user turns `Observation: ...` in the DM's words.
`factory eval` (factory/evaluate/loop.py) and the verl adapter (verl_agent.py) both play it through
`TextGame`, so evaluation and RL see the same game as the training rows. The words differ: the real
world answers in its template narration (prose.py), while rows made under `dm_evaluation: llm`
carry the LLM DM's prose (docs/environments.md, "Observation style"). A reply with no readable
`Action:` line is a format error (`prompts/eval/observations.json`); the world does not move.

A player's turn is one thought and one action: a reply ends at the end of its first `Action:` line,
or where it starts to invent the DM's next `Observation:`, whichever comes first (`turn_end`). What
follows (the invented observation, a second Thought or Action) is not read, and the verl loop trains
none of its tokens (verl_agent.py cuts them off at a token boundary).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from ..prompts import prompt_file, render_prompt
from ..refine.narration import opening_observation
from ..refine.roles import describe_actions
from ..refine.script import Script
from .world_env import Action, RefineWorldEnv, StepResult

# A model trained on whole trajectories may write the DM's next turn itself: the reply ends there.
_INVENTED_OBSERVATION = re.compile(r"\n\s*Observation\s*:")
INVENTED_OBSERVATION_STOP = "\nObservation:"  # the same, as a server's stop string (verl_agent.py)
_FIRST_ACTION_LINE = re.compile(r"^[ \t]*Action[ \t]*:.*$", re.M)  # any action syntax: the turn ends with it
_ACTION_LINE = re.compile(
    r"^[ \t]*Action[ \t]*:[ \t]*(?P<name>[A-Za-z][A-Za-z0-9_ -]*?)[ \t]*\((?P<args>.*)\)[ \t]*$", re.M
)
LABEL = "Observation: "


def observation_templates() -> dict[str, str]:
    return _read_templates(prompt_file("eval/observations.json"))


@lru_cache(maxsize=4)
def _read_templates(path: Path) -> dict[str, str]:
    return json.loads(path.read_text())


def first_turn(script: Script) -> str:
    """The opening prompt, as build_trajectory writes the first user turn."""
    return render_prompt(
        "refine/player_instruction",
        task=script.task,
        actions=describe_actions(script),
        observation=opening_observation(script),
    )


def opening_messages(script: Script) -> list[dict[str, str]]:
    return [{"role": "user", "content": first_turn(script)}]


def turn_end(text: str) -> int:
    """Where the player's own turn ends in `text`: after its first `Action:` line, or before an observation it
    went on to invent, whichever comes first; trailing whitespace is not part of the turn."""
    invented = _INVENTED_OBSERVATION.search(text)
    own = text[: invented.start()] if invented else text
    action = _FIRST_ACTION_LINE.search(own)
    return len(own[: action.end() if action else len(own)].rstrip())


def cut_reply(text: str) -> str:
    """The player's own turn (`turn_end`), without the whitespace around it."""
    return text[: turn_end(text)].strip()


def parse_action(reply: str) -> Action | None:
    """The first `Action: name(k=v, ...)` line, or None when there is none (a format error)."""
    match = _ACTION_LINE.search(reply)
    if match is None:
        return None
    params = _parse_arguments(match["args"])
    return None if params is None else Action(match["name"].strip(), params)


def _parse_arguments(text: str) -> dict[str, str] | None:
    params: dict[str, list[str]] = {}
    last = None
    for piece in text.split(","):
        key, equals, value = piece.partition("=")
        if equals and key.strip().isidentifier():
            last = key.strip()
            params[last] = [value]
        elif last is not None:
            params[last].append(piece)  # the value itself holds a comma
        elif piece.strip():
            return None  # a positional argument: not the refine syntax
    return {key: _unquote(",".join(parts).strip()) for key, parts in params.items()}


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def observe(text: str) -> str:
    return f"{LABEL}{text}"


def format_error_words() -> str:
    return observation_templates()["format"]


def format_error() -> str:
    return observe(format_error_words())


@dataclass(frozen=True)
class GameTurn:
    """One player turn: its reply (cut), the action read from it (None: a format error), and the world's answer."""

    reply: str
    action: Action | None
    result: StepResult

    @property
    def messages(self) -> list[dict[str, str]]:
        """The turn as the trajectory holds it: the player's reply, then the DM's observation."""
        return [
            {"role": "assistant", "content": self.reply},
            {"role": "user", "content": observe(self.result.observation)},
        ]


class TextGame:
    """A RefineWorldEnv behind the refine trajectory's text: `start` gives the first user turn, `play` a reply's turn."""

    def __init__(self, env: RefineWorldEnv):
        self.env = env

    def start(self, source: Script | Mapping[str, Any] | str) -> list[dict[str, str]]:
        self.env.reset(source)
        return opening_messages(self.env.script)

    async def play(self, reply: str, *, cut: bool = True) -> GameTurn:
        """cut=False: `reply` is already the player's turn, kept as it is (verl_agent.py cuts at a token boundary
        and keeps the text of the tokens that train, whitespace included)."""
        said = cut_reply(reply) if cut else reply
        action = parse_action(said)
        result = self.env.no_action(format_error_words()) if action is None else await self.env.astep(action)
        return GameTurn(said, action, result)
