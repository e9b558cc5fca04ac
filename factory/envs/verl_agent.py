"""verl's multi-turn rollout in a refine world: the agent loop `refine_world`.

verl 0.9.1 rolls out multi-turn policies through `verl.experimental.agent_loop`: each row names an
agent loop (`agent_name`), whose `run` talks to the rollout server and returns the token stream, its
loss mask and, optionally, the reward. Its `ToolAgentLoop` does not fit a refine world: its tool list
is global (each script has its own actions), it makes and releases a tool per call (the world's state
lives across the episode), and its messages are tool calls, not the refine trajectory's text. So this
is an `AgentLoopBase` of its own that plays the text game (text_game.py):

    the row's prompt (the game's first user turn) -> generate -> cut the reply to the player's turn
    -> step the env (world.step, or a model playing it) -> append `Observation: ...` -> generate ...

until the goal, the row's `max_steps` (capped by `multi_turn.max_assistant_turns` when set), or the
response length. The policy's tokens train (mask 1), the observations do not (mask 0), through verl's
own Continuous Token merges. Only the turn trains: the server is asked to stop at an invented
`\nObservation:` (vLLM, SGLang and TensorRT-LLM take `stop` strings), and the tokens past the turn's
end (text_game.turn_end: an invented observation, a second Thought/Action) are dropped at a token
boundary (turn_tokens.py); a cut turn gets the template's end-of-turn appended with mask 0, as verl
gives the boundary tokens it inserts itself. The reward is the world's goal verdict (1.0 or 0.0), set
as the rollout's `reward_score`, so no reward function is needed. A rollout whose world failed (a
simulated world's outage or unreadable reply, `env.world_failed`) says nothing about the policy: its
whole response mask is 0 (verl's loss aggregation leaves fully masked sequences out), and
`reward_extra_info.trained` is false. `extra_fields` carry the rollout's messages in the refine
trajectory format (`rollout_messages`) and `reward_extra_info` (goal, steps, invalid actions, format
errors, world failure, trained, cut turns) for verl's metrics. Registered by import and by the export's
`agent_loop.yaml` (`actor_rollout_ref.rollout.agent.agent_loop_config_path`); docs/environments.md.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

from ..errors import MissingExtraError

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.utils.profiler import simple_timer
except ImportError as exc:  # an optional extra: say how to get it, in one line
    raise MissingExtraError(
        f"factory.envs.verl_agent needs verl 0.9.1 ({exc}); install it as the README's test line does"
    ) from None

from .episodes import AGENT_NAME, read_episode
from .text_game import INVENTED_OBSERVATION_STOP, TextGame
from .turn_tokens import end_of_turn_ids, turn_tokens
from .world_env import RefineWorldEnv
from .worlds import make_world

_SIMULATOR_CLIENTS: dict[str, Any] = {}  # one LLM client per simulator config in a rollout worker


def simulator_client(settings: dict[str, Any]) -> Any:
    """The LLM client a simulated world calls (factory.llm), shared by the worker's rollouts."""
    key = json.dumps(settings, sort_keys=True)
    if key not in _SIMULATOR_CLIENTS:
        from ..llm import LLMClient, LLMConfig

        _SIMULATOR_CLIENTS[key] = LLMClient(LLMConfig(**settings))
    return _SIMULATOR_CLIENTS[key]


async def close_simulators() -> None:
    """Close the simulated worlds' LLM clients (on the event loop that used them), e.g. when rollouts end."""
    while _SIMULATOR_CLIENTS:
        await _SIMULATOR_CLIENTS.popitem()[1].close()


@register(AGENT_NAME)
class RefineWorldAgentLoop(AgentLoopBase):
    """A policy playing one refine world per row; `world`: "real" (world.step) or "simulated" (`simulator`: the
    LLMConfig fields of the model that plays the world), set in agent_loop.yaml beside `_target_`."""

    def __init__(self, *args: Any, world: str = "real", simulator: dict | None = None, **kwargs: Any):
        kwargs.pop("tools", None)  # verl hands every agent loop its global tool list; a world has its own actions
        kwargs.pop("name", None)  # the registry entry's own name, passed on as a keyword
        super().__init__(*args, **kwargs)
        self.world_mode, self.simulator = world, dict(simulator or {})
        self.response_length = self.rollout_config.response_length
        self.max_turns = self.rollout_config.multi_turn.max_assistant_turns
        self.end_of_turn = end_of_turn_ids(self.tokenizer)

    def game(self, max_steps: int, validation_code: bool) -> TextGame:
        llm = simulator_client(self.simulator) if self.world_mode == "simulated" else None
        world = make_world(self.world_mode, validation_code=validation_code, llm=llm)
        return TextGame(RefineWorldEnv(max_steps, world))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        episode = read_episode(kwargs.get("extra_info"))
        max_steps = min(episode.max_steps, self.max_turns) if self.max_turns else episode.max_steps
        game = self.game(max_steps, episode.validation_code)
        game.start(episode.script)
        rollout = _Rollout(self, list(kwargs["raw_prompt"]), sampling_params)
        await rollout.begin()
        while True:
            turn = await game.play(await rollout.generate(), cut=False)
            rollout.record(turn)
            if game.env.done or rollout.full():
                break
            await rollout.observe(turn.messages[1])
            if rollout.full():
                break
        return rollout.output(game.env)


class _Rollout:
    """The token stream of one episode, built with verl's Continuous Token merges as ToolAgentLoop builds its own."""

    def __init__(self, loop: RefineWorldAgentLoop, messages: list[dict], sampling_params: dict[str, Any]):
        self.loop, self.messages, self.sampling_params = loop, messages, sampling_params
        self.request_id, self.metrics = uuid4().hex, {}
        self.token_ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.rewards: list[float] = []
        self.counts = {"steps": 0, "invalid_actions": 0, "format_errors": 0, "cut_turns": 0}

    async def begin(self) -> None:
        self.token_ids = await self.loop.ct_build_initial_tokens(self.messages)

    async def generate(self) -> str:
        """The policy's next turn: its tokens (cut to the turn) merged with mask 1; returns their text."""
        asked = self.sampling_params.get("stop") or []
        stops = [*([asked] if isinstance(asked, str) else asked), INVENTED_OBSERVATION_STOP]
        params = {**self.sampling_params, "stop": stops}  # a fresh dict: a server may pop keys from it
        with simple_timer("generate_sequences", self.metrics):
            output = await self.loop.server_manager.generate(
                request_id=self.request_id, prompt_ids=self.token_ids, sampling_params=params
            )
        turn = turn_tokens(self.loop.tokenizer, output.token_ids)
        logprobs = output.log_probs[: len(turn.token_ids)] if output.log_probs else None
        merged, self.mask, logprobs = await self.loop.ct_merge_assistant_token(
            self.token_ids,
            turn.token_ids,
            self.mask,
            self.logprobs if (self.logprobs or logprobs) else None,
            assistant_logprobs=logprobs,
        )
        self.token_ids, self.logprobs = merged.token_ids, logprobs or self.logprobs
        self.counts["cut_turns"] += turn.cut
        if self.token_ids[-1:] != self.loop.end_of_turn[:1]:
            self._end_turn()
        return turn.text

    def _end_turn(self) -> None:
        """A turn that did not end itself (cut, stopped by a stop string) gets the template's end-of-turn, untrained:
        the policy did not sample it (verl gives the boundary tokens it inserts itself mask 0 too)."""
        end = self.loop.end_of_turn
        self.token_ids, self.mask = self.token_ids + end, self.mask + [0] * len(end)
        if self.logprobs:
            self.logprobs = self.logprobs + [0.0] * len(end)

    def record(self, turn) -> None:
        self.messages.append(turn.messages[0])
        self.rewards.append(turn.result.reward)
        self.counts["steps"] += 1
        self.counts["format_errors"] += turn.action is None
        self.counts["invalid_actions"] += turn.action is not None and not turn.result.info.accepted

    async def observe(self, observation: dict) -> None:
        previous = list(self.messages)
        self.messages.append(observation)
        merged, self.mask, logprobs = await self.loop.ct_merge_context_msg(
            previous, self.messages, self.token_ids, self.mask, self.logprobs or None
        )
        self.token_ids, self.logprobs = merged.token_ids, logprobs or self.logprobs

    def full(self) -> bool:
        return len(self.mask) >= self.loop.response_length

    def output(self, env: RefineWorldEnv) -> AgentLoopOutput:
        limit = self.loop.response_length
        response = self.token_ids[len(self.token_ids) - len(self.mask) :]
        reward = 1.0 if env.goal_reached else 0.0
        # A failed world (a simulator's outage, an unreadable verdict) is the environment's fault: nothing trains.
        mask = [0] * len(self.mask) if env.world_failed else self.mask
        outcome = {"goal_reached": env.goal_reached, "world_failed": env.world_failed,
                   "trained": not env.world_failed, **self.counts}  # fmt: skip
        extra = {"turn_scores": self.rewards, "tool_rewards": [], "rollout_messages": self.messages,
                 "reward_extra_info": outcome}  # fmt: skip
        return AgentLoopOutput(
            prompt_ids=self.token_ids[: len(self.token_ids) - len(self.mask)], response_ids=response[:limit],
            response_mask=mask[:limit], response_logprobs=self.logprobs[:limit] or None,
            reward_score=reward, num_turns=len(self.messages), metrics=self.metrics, extra_fields=extra,
        )  # fmt: skip
