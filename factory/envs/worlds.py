"""What decides an action in a refine environment: the real world, or a model playing it.

- `RealWorld`: `world.step` (the declarative rules, the action's validation code through the sandbox
  when on, the effects, the goal), answered in the world-judged DM's words (a refusal's reason; what an
  accepted move changed, prose.py), exactly as the verifier, grounding.py and `factory eval` judge it.
- `SimulatedWorld`: a model plays the DM from the script's rules (factory/envs/simulator.py, AutoCoA's
  RL stage 1: a simulated environment where the real tool is expensive). It knows only the script and
  the history, so it keeps no WorldState.

Both take the action as {name, params} and the earlier steps as the simulator's history,
[{"action": {name, params}, "observation": str, "accepted": bool}], so one env drives either.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import FactoryError
from ..refine.prose import narrate_success
from ..refine.script import Script
from ..refine.world import ExtraCheck, WorldState
from ..refine.world import step as world_step

MODES = ("real", "simulated")


@dataclass(frozen=True)
class Outcome:
    """One action through a world: accepted or refused (with the world's error type), the DM's words,
    whether the goal holds afterwards, and the state after it (None where a model plays the world). `failed`:
    the world gave no verdict at all (a simulator's failed call or unreadable reply), which ends the episode."""

    accepted: bool
    observation: str
    goal_reached: bool
    error_type: str | None = None
    state: WorldState | None = None
    failed: bool = False


class World(Protocol):
    mode: str

    def start(self, script: Script) -> None: ...

    async def step(self, script: Script, state: WorldState | None, history: list[dict], action: dict) -> Outcome: ...


class RealWorld:
    """`world.step` in the DM's words."""

    mode = "real"

    def __init__(self, validation_code: bool = True):
        self.validation_code = validation_code
        self.extra: ExtraCheck | None = None

    def start(self, script: Script) -> None:
        """Arm the sandboxed validation-code check when asked for and the script has code."""
        self.extra = None
        if self.validation_code and any(a.validation_code for a in script.actions):
            from ..refine.validation_code import SandboxCodeChecker

            self.extra = SandboxCodeChecker.step_check(script)

    def decide(self, script: Script, state: WorldState, action: dict) -> Outcome:
        name, params = action["name"], action["params"]
        moved = world_step(script, state, name, params, self.extra)
        if not moved.check.ok:
            return Outcome(False, moved.check.reason, False, moved.check.error_type, state)
        done = moved.done is True
        return Outcome(True, narrate_success(script, state, moved.after, name, params, done), done, None, moved.after)

    async def step(self, script: Script, state: WorldState | None, history: list[dict], action: dict) -> Outcome:
        if self.extra is None:
            return self.decide(script, state, action)
        # The sandbox blocks on a child process: keep it off the loop so other episodes play on.
        return await asyncio.to_thread(self.decide, script, state, action)


class SimulatedWorld:
    """A simulator (`async step(script, history, action) -> SimulatedStep`) standing in for world.step."""

    mode = "simulated"

    def __init__(self, simulator: Any):
        self.simulator = simulator

    def start(self, script: Script) -> None:
        pass

    async def step(self, script: Script, state: WorldState | None, history: list[dict], action: dict) -> Outcome:
        said = await self.simulator.step(script, [dict(h) for h in history], dict(action))
        accepted, failed = bool(said.accepted), bool(getattr(said, "failed", False))
        error = None if accepted else (said.error_type or "logic")  # a refusal always has a type
        return Outcome(accepted, str(said.observation), accepted and bool(said.goal_reached), error, None, failed)


def make_world(mode: str = "real", *, validation_code: bool = True, llm: Any = None, simulator: Any = None) -> World:
    """The world for `mode`: "real", or "simulated" with a simulator (or an LLMClient to build the factory's own)."""
    if mode == "real":
        return RealWorld(validation_code)
    if mode != "simulated":
        raise FactoryError(f"unknown environment mode '{mode}' (choose from {', '.join(MODES)})")
    if simulator is None and llm is None:
        raise FactoryError("the simulated mode needs a model to play the world: pass llm=LLMClient(...) or simulator=")
    if simulator is None:
        from .simulator import WorldSimulator  # written beside this module; loads only when a model plays

        simulator = WorldSimulator(llm)
    return SimulatedWorld(simulator)
