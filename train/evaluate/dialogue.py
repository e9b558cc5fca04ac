"""What the evaluated player reads and writes: the refine path's own format.

The player was trained on `factory.refine.output.build_trajectory`'s turns: a
first user turn from `prompts/refine/player_instruction.md`, then assistant
turns `Thought: ...\\nAction: name(key=value, ...)` (`world.format_action`)
answered by user turns `Observation: ...`. Both a rejected and an accepted
action get the refine world's own words (`factory.refine.narration`, as in
the training data), since there is no LLM narrator here; the goal and an
unparseable reply get `prompts/eval/observations.json`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from factory.prompts import prompt_file, render_prompt
from factory.refine.narration import opening_observation
from factory.refine.prose import narrate_success
from factory.refine.roles import describe_actions
from factory.refine.script import Script
from factory.refine.world import WorldState

# A model trained on whole trajectories may write the DM's next turn itself: the reply ends there.
_INVENTED_OBSERVATION = re.compile(r"\n\s*Observation\s*:")
_ACTION_LINE = re.compile(
    r"^[ \t]*Action[ \t]*:[ \t]*(?P<name>[A-Za-z][A-Za-z0-9_ -]*?)[ \t]*\((?P<args>.*)\)[ \t]*$", re.M
)


@dataclass(frozen=True)
class ParsedAction:
    name: str
    params: dict[str, str]


def observation_templates() -> dict[str, str]:
    return _read_templates(prompt_file("eval/observations.json"))


@lru_cache(maxsize=4)
def _read_templates(path: Path) -> dict[str, str]:
    return json.loads(path.read_text())


def first_turn(script: Script) -> str:
    return render_prompt(
        "refine/player_instruction",
        task=script.task,
        actions=describe_actions(script),
        observation=opening_observation(script),
    )


def cut_reply(text: str) -> str:
    """The player's own turn: up to any observation it went on to invent."""
    return _INVENTED_OBSERVATION.split(text, maxsplit=1)[0].strip()


def parse_action(reply: str) -> ParsedAction | None:
    """The first `Action: name(k=v, ...)` line, or None when there is none (a format error)."""
    match = _ACTION_LINE.search(reply)
    if match is None:
        return None
    params = _parse_arguments(match["args"])
    return None if params is None else ParsedAction(match["name"].strip(), params)


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
    return f"Observation: {text}"


def rejected(reason: str) -> str:
    # The same words as grounding.dm_feedback's observation; its private plan note is for the DM only.
    return observe(reason)


def format_error() -> str:
    return observe(observation_templates()["format"])


def accepted(script: Script, before: WorldState, after: WorldState, name: str, params: dict, done: bool) -> str:
    """What the world-judged DM says after an accepted move, in the words the training rows use (what the move
    changed, factory/refine/prose.py), so a tuned model is evaluated on the observations it was trained on."""
    return observe(narrate_success(script, before, after, name, params, done))
