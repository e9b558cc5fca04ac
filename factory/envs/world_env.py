"""A refine world as an environment: reset from a script, step with a typed action, reward from the goal.

The refine path already has what an RL environment needs: one step function (`world.step`), a goal
the world itself judges, and the DM's words for every outcome. This module gives them the shape RL
code expects, and nothing more:

    env = RefineWorldEnv(max_steps=20)
    opening = env.reset(script)                  # a Script, a script object, or an id of `scripts`
    result = env.step({"name": "go", "params": {"place": "garden"}})
    result.observation, result.reward, result.done, result.info.error_type

The reward is the world's own goal verdict: 1.0 at the step after which the goal holds, else 0.0.
An invalid action leaves the world as it was and is answered with exactly the world's refusal
(`info.feedback`, `info.error_type`). The episode ends at the goal or after `max_steps` steps; a
turn whose reply held no readable action counts as a step too (`no_action`), as in `factory eval`.
What decides an action is a pluggable world (worlds.py: the real one, or a model playing it);
`astep` is the async door, `step` the synchronous one for code outside an event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from pydantic import ValidationError

from ..errors import FactoryError
from ..refine.narration import opening_observation
from ..refine.script import Script
from ..refine.world import WorldState, format_action
from .worlds import RealWorld, World

DEFAULT_MAX_STEPS = 20  # `factory eval`'s default too


class EnvError(FactoryError):
    """The environment was used wrongly: no script to reset from, a step after the end, a malformed action."""


@dataclass(frozen=True)
class Action:
    """One of the script's actions with its parameters, values as the player wrote them (the world reads
    them in their declared types, values.py)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Action | Mapping[str, Any]) -> Action:
        """An Action from itself or from {name, params}; anything else is an EnvError."""
        if isinstance(value, Action):
            return value
        name, params = (value.get("name"), value.get("params", {})) if isinstance(value, Mapping) else (None, None)
        if not isinstance(name, str) or not isinstance(params, Mapping):
            raise EnvError(f"an action is {{name: str, params: {{...}}}}, not {value!r}")
        return cls(name, dict(params))

    def call(self) -> str:
        """As the player writes it: name(key=value, ...)."""
        return format_action(self.name, self.params)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}


@dataclass(frozen=True)
class StepInfo:
    accepted: bool
    error_type: str | None  # the world's error type for a refused action; "format" for a turn with no action
    feedback: str  # the world's refusal ("" when accepted): the words the observation holds
    task_done: bool  # the world's goal verdict after this step
    step: int  # steps taken, this one included
    max_steps: int
    truncated: bool  # the step limit ended the episode before the goal

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StepResult:
    observation: str  # the DM's words, without the text game's `Observation:` label
    reward: float
    done: bool
    info: StepInfo


def script_of(source: Script | Mapping[str, Any] | str, scripts: Mapping[str, Script] | None = None) -> Script:
    """A Script from itself, a script object, or a script id of `scripts`."""
    if isinstance(source, Script):
        return source
    if isinstance(source, str):
        if not scripts or source not in scripts:
            raise EnvError(f"no script '{source}' to reset from (give the scripts: RefineWorldEnv(scripts=...))")
        return scripts[source]
    try:
        return Script.model_validate(source)
    except ValidationError as exc:
        raise EnvError(f"not a refine script: {str(exc).splitlines()[0]}") from None


class RefineWorldEnv:
    """One episode at a time in one refine script's world."""

    def __init__(self, max_steps: int = DEFAULT_MAX_STEPS, world: World | None = None,
                 scripts: Mapping[str, Script] | None = None):  # fmt: skip
        if max_steps < 1:
            raise EnvError(f"max_steps must be at least 1, not {max_steps}")
        self.max_steps, self.world, self.scripts = max_steps, world or RealWorld(), scripts
        self.script: Script | None = None
        self.state: WorldState | None = None  # None where a model plays the world
        self.history: list[dict] = []  # the steps so far, in the simulator's history form (action None: no action)
        self.goal_reached = False
        self.world_failed = False  # the world gave no verdict (a simulator's failed call): the episode ends

    @property
    def steps(self) -> int:
        return len(self.history)

    @property
    def done(self) -> bool:
        return self.goal_reached or self.world_failed or self.steps >= self.max_steps

    def reset(self, source: Script | Mapping[str, Any] | str) -> str:
        """Start an episode; returns the opening observation (where the player is, what it sees and holds)."""
        script = script_of(source, self.scripts)
        if not script.goal.conditions:
            raise EnvError("the script declares no goal: the world cannot judge success, so there is no reward")
        self.world.start(script)
        self.script, self.history = script, []
        self.state = WorldState.initial(script) if self.world.mode == "real" else None  # a model keeps its own
        self.goal_reached = self.world_failed = False
        return opening_observation(script)

    async def astep(self, action: Action | Mapping[str, Any]) -> StepResult:
        action = Action.of(action)
        self._check_open()
        moves = [h for h in self.history if h["action"] is not None]  # a turn with no action is no world event
        said = await self.world.step(self.script, self.state, moves, action.to_dict())
        if said.accepted and said.state is not None:
            self.state = said.state
        self.goal_reached, self.world_failed = said.goal_reached, said.failed
        feedback = "" if said.accepted else said.observation
        return self._record(action.to_dict(), said.observation, said.accepted, said.error_type, feedback)

    def step(self, action: Action | Mapping[str, Any]) -> StepResult:
        """`astep` for code outside an event loop (inside one, await `astep`)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.astep(action))
        raise EnvError("step() was called inside an event loop: await env.astep(action) there")

    def no_action(self, feedback: str) -> StepResult:
        """A turn whose reply held no action the game could read: the world does not move, the turn counts."""
        self._check_open()
        return self._record(None, feedback, False, "format", feedback)

    def _check_open(self) -> None:
        if self.script is None:
            raise EnvError("reset the environment with a script before stepping")
        if self.done:
            raise EnvError(f"the episode is over after {self.steps} step(s); reset to play again")

    def _record(
        self, action: dict | None, observation: str, accepted: bool, error: str | None, feedback: str
    ) -> StepResult:
        self.history.append({"action": action, "observation": observation, "accepted": accepted})
        info = StepInfo(accepted, error, feedback, self.goal_reached, self.steps, self.max_steps,
                        self.steps >= self.max_steps and not self.goal_reached)  # fmt: skip
        return StepResult(observation, 1.0 if self.goal_reached else 0.0, self.done, info)
