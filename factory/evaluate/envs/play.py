"""The loop for real environments: the same player, turn format and scores as the refine environments.

The player reads the refine path's ReAct form (a first user turn listing the
task, the actions and the opening observation, then `Observation: ...` turns)
and answers `Thought: ...` / `Action: ...`. A reply with no `Action:` line, or
naming a command that is not available now, is a format error (AgentBoard
counts invalid actions the same way) and the game does not move. Episodes end
on the game's own end (won: success; lost or out of its own steps: `game_over`),
at `max_steps` player turns (`step_limit`), or when no reply can be had
(`player_error`). Progress is the best the episode reached (AgentBoard's progress rate).
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from factory.envs.text_game import cut_reply, observation_templates, observe
from factory.prompts import render_prompt

from ..loop import EvalResults, play_all, run_closing
from ..metrics import EpisodeResult, MistakeTracker, StepRecord
from ..players import Player, PlayerError
from .base import EnvEpisode, TextEnv, parse_command


def first_turn(env: TextEnv, opening: str) -> str:
    return render_prompt("eval/env_instruction", task=env.task, actions=env.actions_text, observation=opening)


def format_error(env: TextEnv) -> str:
    return observe(observation_templates()["env_format"].format(available=env.available()))


async def play_env_episode(spec: EnvEpisode, player: Player, max_steps: int = 20, loop_k: int = 3) -> EpisodeResult:
    env = await asyncio.to_thread(spec.make)
    try:
        opening = await asyncio.to_thread(env.reset)
        return await _play(env, opening, player, max_steps, loop_k)
    finally:
        await asyncio.to_thread(env.close)


async def _play(env: TextEnv, opening: str, player: Player, max_steps: int, loop_k: int) -> EpisodeResult:
    messages = [{"role": "user", "content": first_turn(env, opening)}]
    tracker, transcript, format_errors = MistakeTracker(loop_k), [], 0
    status, error, best, distance = "step_limit", None, 0.0, env.initial_distance
    for _ in range(max_steps):
        try:
            reply = cut_reply(await player.act(list(messages)))
        except PlayerError as exc:
            status, error = "player_error", str(exc)
            break
        messages.append({"role": "assistant", "content": reply})
        text = parse_command(reply)
        command = env.resolve(text) if text else None
        if command is None:
            format_errors += 1
            tracker.see(env.state_key(), "format:" + (text or " ".join(reply.split())), valid=False)
            transcript.append(StepRecord(reply, text, "format", "no action line" if text is None else "not available"))
            messages.append({"role": "user", "content": format_error(env)})
            continue
        tracker.see(env.state_key(), command, valid=True)
        outcome = await asyncio.to_thread(env.step, command)
        measure = await asyncio.to_thread(env.measure)
        best, distance = max(best, measure.progress), measure.distance
        transcript.append(StepRecord(reply, command, "ok"))
        goal = observation_templates()["env_goal"]
        shown = goal.format(observation=outcome.observation) if outcome.won else outcome.observation
        messages.append({"role": "user", "content": observe(shown)})
        if outcome.done:
            status = "success" if outcome.won else "game_over"
            break
    success = status == "success"
    return EpisodeResult(
        env_id=env.env_id, task=env.task, status=status, success=success, progress=1.0 if success else best,
        steps=len(transcript), initial_distance=env.initial_distance, final_distance=distance,
        format_errors=format_errors, invalid_by_type={}, loops=tracker.loops, revisits=tracker.revisits,
        longest_mistake_streak=tracker.longest_streak, error=error, transcript=transcript,
    )  # fmt: skip


async def evaluate_envs_async(episodes: Sequence[EnvEpisode], player: Player, max_steps: int = 20,
                              concurrency: int = 4, loop_k: int = 3, names: Sequence[str] = ()) -> EvalResults:  # fmt: skip
    results = await play_all(episodes, lambda spec: play_env_episode(spec, player, max_steps, loop_k), concurrency)
    settings = {"max_steps": max_steps, "concurrency": concurrency, "loop_k": loop_k, **getattr(player, "settings", {})}
    selection = {"environments": [e.env_id for e in episodes], "env_names": list(names),
                 "evidence": ["real environments no one here wrote: every episode is held out"], "excluded": []}  # fmt: skip
    return EvalResults(player.name, settings, results, selection)


def evaluate_envs(episodes: Sequence[EnvEpisode], player: Player, max_steps: int = 20, concurrency: int = 4,
                  loop_k: int = 3, names: Sequence[str] = ()) -> EvalResults:  # fmt: skip
    """Play every episode once, then close the player's connections."""
    return run_closing(player, lambda: evaluate_envs_async(episodes, player, max_steps, concurrency, loop_k, names))
