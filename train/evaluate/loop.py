"""The DM loop: a player acts in each environment until the goal or the step limit.

Each reply is parsed with the refine path's action syntax and run through the
world's one step function, `world.step` (the declarative rules, then the
action's validation code through the sandbox when the script has it, with
values in their declared types; the effects; the goal), exactly as the refine
verifier and world-judged DM run it, and answered with the observation the
refine path would give. Nothing here trusts the player: an
unparseable reply is a format error, a failed request ends the episode as a
`player_error`, and every episode is scored the same way (metrics.py).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from factory.refine.solvable import shortest_plan
from factory.refine.validation_code import SandboxCodeChecker
from factory.refine.world import ExtraCheck, WorldState, format_action, step

from . import dialogue
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


def code_check(env: Environment, validation_code: bool) -> ExtraCheck | None:
    """The sandboxed validation-code check for `world.step`, when asked for and present."""
    if validation_code and any(a.validation_code for a in env.script.actions):
        return SandboxCodeChecker.step_check(env.script)
    return None


async def play_episode(
    env: Environment, player: Player, max_steps: int = 20, loop_k: int = 3, validation_code: bool = True
) -> EpisodeResult:
    script, extra = env.script, code_check(env, validation_code)
    state = WorldState.initial(script)
    messages = [{"role": "user", "content": dialogue.first_turn(script)}]
    tracker, transcript = MistakeTracker(loop_k), []
    format_errors, invalid = 0, {}
    status, error = "step_limit", None
    for _ in range(max_steps):
        try:
            reply = dialogue.cut_reply(await player.act(list(messages)))
        except PlayerError as exc:
            status, error = "player_error", str(exc)
            break
        messages.append({"role": "assistant", "content": reply})
        parsed = dialogue.parse_action(reply)
        if parsed is None:
            format_errors += 1
            tracker.see(state.key(), "format:" + " ".join(reply.split()), valid=False)
            transcript.append(StepRecord(reply, None, "format"))
            messages.append({"role": "user", "content": dialogue.format_error()})
            continue
        call = format_action(parsed.name, parsed.params)
        # The sandbox blocks on a child process: keep it off the loop so other episodes play on.
        moved = await asyncio.to_thread(step, script, state, parsed.name, parsed.params, extra)
        checked = moved.check
        tracker.see(state.key(), call, valid=checked.ok)
        if not checked.ok:
            invalid[checked.error_type] = invalid.get(checked.error_type, 0) + 1
            transcript.append(StepRecord(reply, call, checked.error_type, checked.reason))
            messages.append({"role": "user", "content": dialogue.rejected(checked.reason)})
            continue
        before, state, done = state, moved.after, bool(moved.done)
        transcript.append(StepRecord(reply, call, "ok"))
        said = dialogue.accepted(script, before, state, parsed.name, parsed.params, done)
        messages.append({"role": "user", "content": said})
        if done:
            status = "success"
            break
    return _result(env, state, status, error, transcript, format_errors, invalid, tracker)


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


async def play_all(items: Sequence, play: Callable[[Any], Awaitable[EpisodeResult]],
                   concurrency: int) -> list[EpisodeResult]:  # fmt: skip
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
                         concurrency: int = 8, loop_k: int = 3,
                         validation_code: bool = True) -> EvalResults:  # fmt: skip
    """Play every environment once (`concurrency` at a time); episodes come back in env order."""
    selection = envs if isinstance(envs, Selection) else Selection(list(envs))
    episodes = await play_all(
        selection.environments, lambda env: play_episode(env, player, max_steps, loop_k, validation_code), concurrency
    )
    settings = {"max_steps": max_steps, "concurrency": concurrency, "loop_k": loop_k,
                "validation_code": validation_code, **getattr(player, "settings", {})}  # fmt: skip
    return EvalResults(player.name, settings, episodes, selection.to_dict())


def evaluate(envs: Sequence[Environment] | Selection, player: Player, max_steps: int = 20, concurrency: int = 8,
             loop_k: int = 3, validation_code: bool = True) -> EvalResults:  # fmt: skip
    """The synchronous entry point: runs the episodes, then closes the player's connections."""
    return run_closing(player, lambda: evaluate_async(envs, player, max_steps, concurrency, loop_k, validation_code))
