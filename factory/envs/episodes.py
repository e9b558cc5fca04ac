"""One refine world as an RL row, and back: the contract between the RL export and the verl agent loop.

The RL export (factory/export/verl_envs.py) writes each refine world of the RL split as a verl row;
verl's RLHFDataset hands the row's fields to the agent loop named in `agent_name`
(factory/envs/verl_agent.py), which reads the episode back with `read_episode`. Both sides use this
module, so a key cannot drift. The row's `prompt` is the text game's opening (the first user turn the
refine rows train on), and its reward is the world's goal verdict, computed by the agent loop: the
`reward_model` only records what the world checks (the goal conditions), for readers of the data.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any, Mapping

from pydantic import ValidationError

from ..refine.script import Script
from .text_game import opening_messages
from .world_env import DEFAULT_MAX_STEPS, EnvError

AGENT_NAME = "refine_world"  # the verl agent loop's registered name (verl_agent.py)
DATA_SOURCE = "factory/refine_world"
ABILITY = "agent"
REWARD_STYLE = "env"  # the environment scores the rollout; no reward function reads the ground truth


@dataclass(frozen=True)
class Episode:
    script_id: str
    script: Script
    max_steps: int
    validation_code: bool


def episode_row(script_id: str, script: Script, split: str, trajectory_ids: list[str], plan_length: int,
                max_steps: int = DEFAULT_MAX_STEPS, validation_code: bool = True) -> dict[str, Any]:  # fmt: skip
    """The verl row of one refine world (docs/rl_handoff.md, "Refine worlds")."""
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": opening_messages(script),
        "ability": ABILITY,
        "reward_model": {"style": REWARD_STYLE, "ground_truth": script.goal.model_dump_json()},
        "extra_info": {
            "index": script_id, "split": split, "script_id": script_id, "task": script.task,
            "script": script.model_dump_json(), "max_steps": max_steps, "validation_code": validation_code,
            "plan_length": plan_length, "trajectory_ids": trajectory_ids,
        },
    }  # fmt: skip


def read_episode(extra_info: Mapping[str, Any] | None) -> Episode:
    """The episode a row's extra_info describes; an EnvError names the field that is missing or broken."""
    info = extra_info or {}
    script_id, body = info.get("script_id"), info.get("script")
    row = f"row {script_id or '?'}"
    if not isinstance(body, str):
        raise EnvError(f"{row}: extra_info.script (the script's JSON) is missing")
    try:
        script = Script.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        raise EnvError(f"{row}: extra_info.script is not a refine script ({str(exc).splitlines()[0]})") from None
    return Episode(str(script_id or ""), script, _max_steps(row, info.get("max_steps")),
                   _switch(row, "validation_code", info.get("validation_code")))  # fmt: skip


def _max_steps(row: str, value: Any) -> int:
    """A whole number of steps, at least 1 (a parquet integer arrives as numpy's); absent: the default."""
    if value is None:
        return DEFAULT_MAX_STEPS
    try:
        steps = operator.index(value) if not isinstance(value, bool) else 0
    except TypeError:
        steps = 0
    if steps < 1:
        raise EnvError(f"{row}: extra_info.max_steps must be a whole number of steps, at least 1, not {value!r}")
    return steps


def _switch(row: str, field: str, value: Any) -> bool:
    """A true/false field (numpy's booleans too); absent: on."""
    if value is None:
        return True
    if value not in (True, False) or isinstance(value, str):
        raise EnvError(f"{row}: extra_info.{field} must be true or false, not {value!r}")
    return bool(value)
