"""The simulated environment (AutoCoA's RL stage 1): a model plays the world of a refine script, one move at a time.

Why: RL needs an environment to roll out in, and where the real one is expensive (a paid tool, a slow
service) AutoCoA first trains against a model that plays it. Here the model is the factory's DM: it reads the
script's environment, its actions and the rules the DM judges by (`roles.describe_environment`,
`describe_actions`, `dm_rules`: the same words the LLM-played refine path gives its DM), the moves so far
with what the player was told, and the next move, and answers with the DM half of a refine step on the same
wire keys (`3_dm_thinking`, `4_observation`, `5_evaluation`, schemas.WIRE_KEYS). The refine DM prompt
(prompts/refine/trajectory_*) cannot be reused as it is: it plays a whole story, player included, in one call;
an environment answers one given move, so prompts/envs/simulator_{system,user}.md state the same rules for one
step. The error types add `unknown_action` (the world's own type) since a policy, unlike the refine player
under its schema, can call an action the script does not have.

`simulator_messages` is public so the simulator's SFT rows (factory/export/world_model.py) train exactly what
the simulator is asked. A failed call or an unreadable reply is a `SimulatedStep` whose `failed` is true and
whose observation says why: the caller decides (end the episode, count it), nothing raises.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..llm import LLMClient, Request, Result
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt
from ..refine.narration import opening_observation
from ..refine.roles import CHARS_PER_TOKEN, describe_actions, describe_environment, dm_rules
from ..refine.schemas import ERROR_TYPES, TEXT_MAX, WIRE_KEYS, from_wire
from ..refine.script import Script
from ..refine.world import format_action

SIMULATOR_FAILED = "simulator_failed"  # the error_type of a step the simulator could not answer
SIMULATOR_ERRORS = [*ERROR_TYPES, "unknown_action"]
THINKING_MAX = 400  # the check states the whole state before the move, then the rule: more room than a story's
REPLY_KEYS = ("dm_thinking", "observation", "evaluation")  # the DM half of a refine step


@dataclass
class SimulatedStep:
    accepted: bool
    observation: str
    goal_reached: bool
    error_type: str | None

    @property
    def failed(self) -> bool:
        """The simulator gave no verdict (a failed call, an unreadable reply): not the world refusing the move."""
        return self.error_type == SIMULATOR_FAILED


class _Evaluation(BaseModel):
    error: str
    task_done: bool


class _Reply(BaseModel):
    dm_thinking: str
    observation: str
    evaluation: _Evaluation


def _text(max_length: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length}


def simulator_schema() -> dict[str, Any]:
    """The reply: the DM's check, what the player is told, the verdict; every string bounded (small models)."""
    evaluation = {
        "type": "object",
        "properties": {"error": {"enum": SIMULATOR_ERRORS}, "task_done": {"type": "boolean"}},
        "required": ["error", "task_done"],
        "additionalProperties": False,
    }
    fields = {"dm_thinking": _text(THINKING_MAX), "observation": _text(TEXT_MAX), "evaluation": evaluation}
    properties = {WIRE_KEYS[name]: spec for name, spec in fields.items()}
    return {"title": "SimulatedStep", "type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}  # fmt: skip


def action_call(action: dict) -> str:
    """A move as the player writes it, `take(item=key)`; a policy's malformed move is shown as it came."""
    params = action.get("params")
    return format_action(str(action.get("name", "")), params if isinstance(params, dict) else {})


def describe_history(history: list[dict]) -> str:
    """The moves so far, one a line: the call, the world's verdict, what the player was told."""
    if not history:
        return "none yet (this is the first move)"
    lines = []
    for number, done in enumerate(history, start=1):
        call = action_call(done["action"])
        verdict = "accepted" if done["accepted"] else "refused"
        lines.append(f"{number}. {call}: {verdict}. The player was told: {done['observation']}")
    return "\n".join(lines)


def simulator_messages(script: Script, history: list[dict], action: dict) -> list[dict]:
    """What the simulator is asked for one move: system rules, then the world, the moves so far and the move."""
    user = render_prompt(
        "envs/simulator_user", environment=describe_environment(script), task=script.task,
        opening=opening_observation(script), actions=describe_actions(script), rules=dm_rules(script),
        history=describe_history(history), action=action_call(action),
    )  # fmt: skip
    return chat(load_prompt("envs/simulator_system"), user)


def reply_text(dm_thinking: str, observation: str, error: str | None, task_done: bool) -> str:
    """A reply as the simulator writes it (its wire keys, compact JSON): the SFT rows' target text."""
    reply = {
        "dm_thinking": dm_thinking,
        "observation": observation,
        "evaluation": {"error": error or "none", "task_done": task_done},
    }
    return json.dumps({WIRE_KEYS[key]: reply[key] for key in REPLY_KEYS}, ensure_ascii=False, separators=(",", ":"))


def failed_step(why: str) -> SimulatedStep:
    return SimulatedStep(False, f"the simulator gave no verdict: {why}", False, SIMULATOR_FAILED)


class StepSimulator(Role):
    """The simulator's role: (script, history, action) -> Request; the parsed reply -> SimulatedStep."""

    name, reply_type = "world_simulator", dict  # the schema is the same for every script (simulator_schema)

    def __init__(self, stage: str = "simulator"):
        self.stage = stage

    def request(self, script: Script, history: list[dict], action: dict, tag: Any = None) -> Request:
        reply = (THINKING_MAX + TEXT_MAX + 80) // CHARS_PER_TOKEN  # both texts at their bounds, keys and verdict
        return Request(simulator_messages(script, history, action), simulator_schema(), stage=self.stage, tag=tag,
                       reply_tokens=reply)  # fmt: skip

    @staticmethod
    def parse(parsed: Any) -> SimulatedStep:
        try:
            reply = _Reply.model_validate(from_wire(parsed))
        except ValidationError as exc:
            return failed_step(f"unreadable reply ({exc.errors()[0]['msg']})")
        error = reply.evaluation.error
        if error not in SIMULATOR_ERRORS:
            return failed_step(f"unknown error type {error!r}")
        accepted = error == "none"
        return SimulatedStep(
            accepted, reply.observation, accepted and reply.evaluation.task_done, None if accepted else error
        )


class WorldSimulator:
    """A refine world played by a model: `step` judges one move given the moves before it."""

    def __init__(self, llm: LLMClient, stage: str = "simulator"):
        self.llm = llm
        self.role = StepSimulator(stage)

    async def step(self, script: Script, history: list[dict], action: dict) -> SimulatedStep:
        result = await self.llm.run(self.role.request(script, history, action))
        return self.read(result)

    def read(self, result: Result) -> SimulatedStep:
        if not result.ok:
            return failed_step(f"llm {result.error_kind}: {result.error}")
        if not isinstance(result.parsed, dict):
            return failed_step("the reply is not a JSON object")
        return self.role.parse(result.parsed)
