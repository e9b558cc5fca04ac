"""The DM loop: a player acts in each environment until the goal or the step limit.

Each episode plays the refine world environment (factory/envs/world_env.py) through the text game
(factory/envs/text_game.py), the same game RL rollouts play: a reply is parsed with the refine path's
action syntax and run through the world's one step function, `world.step` (the declarative rules, then
the action's validation code through the sandbox when the script has it, with values in their declared
types; the effects; the goal), exactly as the refine verifier and world-judged DM run it, and answered
with the observation the refine path would give. Nothing here trusts the player: an unparseable reply
is a format error, a failed request ends the episode as a `player_error`, and every episode is scored
the same way (metrics.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from factory.envs import text_game as game
from factory.envs.world_env import RefineWorldEnv
from factory.envs.worlds import RealWorld
from factory.refine.solvable import shortest_plan

from . import native
from .environments import Environment, Selection
from .metrics import EpisodeResult, MistakeTracker, StepRecord, progress_rate, summarize
from .players import Player, PlayerError


@dataclass
class EvalResults:
    player: str
    settings: dict[str, Any]
    episodes: list[EpisodeResult]
    selection: dict[str, Any] = field(default_factory=dict)  # environments, exclusions, evidence

    @property
    def overall(self) -> dict[str, Any]:
        return summarize(self.episodes)

    def to_dict(self) -> dict[str, Any]:
        return {"player": self.player, "settings": self.settings, "overall": self.overall,
                "selection": self.selection, "environments": [e.to_dict() for e in self.episodes]}  # fmt: skip


async def play_episode(
    env: Environment, player: Player, max_steps: int = 20, loop_k: int = 3, validation_code: bool = True,
    native: bool = False,
) -> EpisodeResult:  # fmt: skip
    """One episode in the refine world env (factory/envs); `native`: the player gets the actions as `tools`
    and calls them (native.py)."""
    world = RefineWorldEnv(max_steps, RealWorld(validation_code))
    world.reset(env.script)
    turns = _NativeTurns(env.script) if native else _TextTurns(env.script)
    messages = turns.first()
    tracker, transcript = MistakeTracker(loop_k), []
    format_errors, invalid = 0, {}
    status, error = "step_limit", None
    while not world.done:
        try:
            reply = game.cut_reply(await turns.act(player, list(messages)))
        except PlayerError as exc:
            status, error = "player_error", str(exc)
            break
        parsed, said = turns.read(reply)
        messages.append(said)
        here = world.state.key()
        if parsed is None:
            format_errors += 1
            tracker.see(here, "format:" + " ".join(reply.split()), valid=False)
            transcript.append(StepRecord(reply, None, "format"))
            world.no_action(game.format_error_words())
            messages.append(turns.format_error())
            continue
        result = await world.astep(parsed)
        tracker.see(here, parsed.call(), valid=result.info.accepted)
        if not result.info.accepted:  # an action the environment does not have is its own kind (unknown_action)
            invalid[result.info.error_type] = invalid.get(result.info.error_type, 0) + 1
        outcome = "ok" if result.info.accepted else result.info.error_type
        transcript.append(StepRecord(reply, parsed.call(), outcome, result.info.feedback))
        messages.append(turns.answer(parsed, game.observe(result.observation)))
    if world.goal_reached:
        status = "success"
    return _result(env, world.state, status, error, transcript, format_errors, invalid, tracker)


class _TextTurns:
    """The training rows' text form: Thought/Action replies, `Observation:` user turns."""

    def __init__(self, script):
        self.script = script

    def first(self) -> list[dict]:
        return [{"role": "user", "content": game.first_turn(self.script)}]

    async def act(self, player: Player, messages: list[dict]) -> str:
        return await player.act(messages)

    def read(self, reply: str):
        return game.parse_action(reply), {"role": "assistant", "content": reply}

    def answer(self, parsed, said: str) -> dict:
        return {"role": "user", "content": said}

    def format_error(self) -> dict:
        return {"role": "user", "content": game.format_error()}


class _NativeTurns(_TextTurns):
    """Native tool calling: the actions as `tools`, a call read in its model family's form, `tool` answers."""

    def __init__(self, script):
        super().__init__(script)
        self.tools, self.calls = native.tools(script), 0

    def first(self) -> list[dict]:
        return native.first_messages(self.script)

    async def act(self, player: Player, messages: list[dict]) -> str:
        return await player.act(messages, self.tools)

    def read(self, reply: str):
        found = native.parse_tool_call(reply)
        if found is None:
            return None, {"role": "assistant", "content": reply}
        self.calls += 1
        return found[1], native.assistant_message(found[0], found[1], self.calls)

    def answer(self, parsed, said: str) -> dict:
        return native.tool_message(self.calls, parsed.name, said)

    def format_error(self) -> dict:
        return native.format_error_message()


def _result(env, state, status, error, transcript, format_errors, invalid, tracker) -> EpisodeResult:
    success = status == "success"
    plan = [] if success else shortest_plan(env.script, state)
    remaining = None if plan is None else len(plan)
    return EpisodeResult(
        env_id=env.env_id, task=env.script.task, status=status, success=success,
        progress=progress_rate(env.plan_length, remaining), steps=len(transcript),
        initial_distance=env.plan_length, final_distance=remaining, format_errors=format_errors,
        invalid_by_type=invalid, loops=tracker.loops, revisits=tracker.revisits,
        longest_mistake_streak=tracker.longest_streak, error=error, transcript=transcript,
    )  # fmt: skip


async def play_all(
    items: Sequence, play: Callable[[Any], Awaitable[EpisodeResult]], concurrency: int
) -> list[EpisodeResult]:
    """Play every item (`concurrency` at a time); results come back in item order."""
    gate = asyncio.Semaphore(concurrency)

    async def one(item) -> EpisodeResult:
        async with gate:
            return await play(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


def run_closing(player: Player, evaluation: Callable[[], Awaitable[EvalResults]]) -> EvalResults:
    """Run an evaluation to the end on a fresh event loop, then close the player's connections."""

    async def run() -> EvalResults:
        try:
            return await evaluation()
        finally:
            close = getattr(player, "close", None)
            if close is not None:
                await close()

    return asyncio.run(run())


async def evaluate_async(envs: Sequence[Environment] | Selection, player: Player, max_steps: int = 20,
                         concurrency: int = 8, loop_k: int = 3, validation_code: bool = True,
                         native_tools: bool = False) -> EvalResults:  # fmt: skip
    """Play every environment once (`concurrency` at a time); episodes come back in env order."""
    selection = envs if isinstance(envs, Selection) else Selection(list(envs))
    episodes = await play_all(
        selection.environments,
        lambda env: play_episode(env, player, max_steps, loop_k, validation_code, native_tools),
        concurrency,
    )
    settings = {"max_steps": max_steps, "concurrency": concurrency, "loop_k": loop_k,
                "validation_code": validation_code, "tool_calls": "native" if native_tools else "text",
                **getattr(player, "settings", {})}  # fmt: skip
    return EvalResults(player.name, settings, episodes, selection.to_dict())


def evaluate(envs: Sequence[Environment] | Selection, player: Player, max_steps: int = 20, concurrency: int = 8,
             loop_k: int = 3, validation_code: bool = True, native_tools: bool = False) -> EvalResults:  # fmt: skip
    """The synchronous entry point: runs the episodes, then closes the player's connections."""
    return run_closing(
        player, lambda: evaluate_async(envs, player, max_steps, concurrency, loop_k, validation_code, native_tools)
    )
