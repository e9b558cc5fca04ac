"""verl rolls out a policy in the exported refine worlds through its own agent-loop code (issue 29).

The RL export writes the refine worlds of the RL split (factory/export/verl_envs.py); verl 0.9.1's own
`RLHFDataset` and `collate_fn` read them into a batch, and verl's own `AgentLoopWorker` (built from
verl's generated trainer config, registering our loop from the exported agent_loop.yaml) dispatches
each row to the `refine_world` agent loop (factory/envs/verl_agent.py) and pads, masks and scores the
result. Only the LLM server is a stand-in, the network edge: it decodes the prompt tokens it is sent
and returns the policy's next reply as a real tokenizer's tokens, ending at <|im_end|> as a server does.
The policy is scripted (a capable model's replies, tests/env_rows.py) or, marked local_model, the
embedded model behind the loopback server. verl's run path is driven by tests/verl_rollout.py.

verl's imports need a few things not on its import path here: hydra-core 1.4.0rc1 (1.3's grammar needs
antlr 4.9, omegaconf 2.4 ships 4.13), codetiming and cachetools, installed with --no-deps; its HTTP
server modules (uvicorn, fastapi: the server this test stands in for) and the Qwen2-VL helper
transformers 5.24 lacks (as in test_consumer_verl_native.py) get empty stand-ins when absent.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from env_rows import ARCHIVE, ARCHIVE_REPLIES, GARDEN_REPLIES, make_world_run, refine_turns
from test_refine_world import GARDEN
from verl_rollout import agent_loop_worker, roll_out

from factory.export import ExportOptions, export_dataset
from factory.export.verl import RLOptions
from factory.refine.script import Script
from factory.refine.world import WorldState, check_action
from factory.refine.world import step as world_step

for needed in ("verl", "hydra", "codetiming", "cachetools"):
    pytest.importorskip(needed, reason="verl and what its agent loop imports are installed with --no-deps (README)")

# verl's config names its classes by `_target_`; hydra 1.4 warns that a later version will want a whitelist.
pytestmark = pytest.mark.filterwarnings(r"ignore:hydra.utils.instantiate\(\) resolved _target_:UserWarning")
MAX_TURNS = 5  # actor_rollout_ref.rollout.multi_turn.max_assistant_turns: caps the rows' max_steps (20)


@pytest.fixture(scope="module")
def verl_loop():
    return agent_loop_worker()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("worlds")
    result = export_dataset(make_world_run(root / "run"), root / "out", ExportOptions(formats=["sharegpt"],
                            validation=0), rl=RLOptions())  # fmt: skip
    return root, result


def scripted(messages: list[dict]) -> str:
    """The replies of tests/env_rows.py by world and turn, then the last one again."""
    replies = GARDEN_REPLIES if GARDEN["task"] in messages[1]["content"] else ARCHIVE_REPLIES
    turn = sum(m["role"] == "assistant" for m in messages)
    return replies[min(turn, len(replies) - 1)]


def replayed(script: Script, replies: list[str], turns: int):
    """The world's own verdicts on the replies' actions: (goal reached, [(ok, error type, reason) per action])."""
    from factory.envs.text_game import parse_action

    state, verdicts, reached = WorldState.initial(script), [], False
    for reply in [replies[min(i, len(replies) - 1)] for i in range(turns)]:
        action = parse_action(reply)
        if action is None:
            continue
        check = check_action(script, state, action.name, action.params)
        verdicts.append((check.ok, check.error_type, check.reason))
        moved = world_step(script, state, action.name, action.params)
        state, reached = moved.after, reached or bool(moved.done)
        if reached:
            break
    return reached, verdicts


async def _scripted(messages):
    return scripted(messages)


@pytest.fixture(scope="module")
def rollout(verl_loop, exported):
    root, _ = exported
    return roll_out(verl_loop, root, _scripted, MAX_TURNS)


def sample(output, script_id: str) -> int:
    return next(i for i, info in enumerate(output.non_tensor_batch["extra_info"]) if info["script_id"] == script_id)


def test_the_reward_is_the_worlds_goal_verdict(rollout):
    output, _, _ = rollout
    for script_id, world, replies in (("garden:0", GARDEN, GARDEN_REPLIES), ("archive:0", ARCHIVE, ARCHIVE_REPLIES)):
        i = sample(output, script_id)
        reached, _ = replayed(Script.model_validate(world), replies, MAX_TURNS)
        scores = output.batch["rm_scores"][i]
        assert scores.sum().item() == (1.0 if reached else 0.0)
        assert output.non_tensor_batch["goal_reached"][i] == reached
        last = output.batch["attention_mask"][i, output.batch["prompts"].shape[1] :].sum().item() - 1
        assert scores.nonzero().flatten().tolist() == ([last] if reached else [])  # verl's place: the last token
    assert sorted(output.batch["rm_scores"].sum(-1).tolist()) == [0.0, 1.0]  # one world won, one not


def test_invalid_actions_are_answered_with_the_worlds_error(rollout):
    from factory.envs.text_game import format_error

    output, _, _ = rollout
    i = sample(output, "archive:0")
    messages = output.non_tensor_batch["rollout_messages"][i]
    _, verdicts = replayed(Script.model_validate(ARCHIVE), ARCHIVE_REPLIES, MAX_TURNS)
    observations = [m["content"] for m in messages[2::2]]  # the user turns after each reply (the last has none)
    assert observations[0] == format_error()  # the first reply has no action line
    assert [f"Observation: {reason}" for ok, _, reason in verdicts[:-1]] == observations[1:]
    assert [kind for _, kind, _ in verdicts] == ["unknown_action", "location", "location", "location"]
    counts = {key: output.non_tensor_batch[key][i] for key in ("steps", "format_errors", "invalid_actions")}
    assert counts == {"steps": MAX_TURNS, "format_errors": 1, "invalid_actions": MAX_TURNS - 1}


def test_the_rollout_is_the_refine_trajectory(rollout):
    output, _, _ = rollout
    script = Script.model_validate(GARDEN)
    messages = list(output.non_tensor_batch["rollout_messages"][sample(output, "garden:0")])
    assert messages == refine_turns(script, GARDEN_REPLIES)  # first turn, Thought/Action, Observation: ... as built
    assert output.non_tensor_batch["raw_prompt"][sample(output, "garden:0")] == messages[:1]


def test_verl_trains_the_policys_tokens_and_not_the_worlds(rollout):
    from factory.mask.render import IGNORE, render

    output, server, tokenizer = rollout
    width = output.batch["prompts"].shape[1]
    for i in range(len(output)):
        keep = output.batch["attention_mask"][i].bool()
        ids = output.batch["input_ids"][i][keep].tolist()
        trained = [p for p, m in enumerate(output.batch["response_mask"][i].tolist()) if m]
        prompt_length = keep[:width].sum().item()
        rendered = render({"messages": output.non_tensor_batch["rollout_messages"][i]}, tokenizer)
        assert ids == rendered.input_ids[: len(ids)] and tokenizer.decode(rendered.input_ids[len(ids) :]) == "\n"
        assert [prompt_length + p for p in trained] == [p for p, x in enumerate(rendered.labels) if x != IGNORE]
    assert all(text.endswith("<|im_start|>assistant\n") for text in server.prompts)  # each turn asks for a reply


def replay_game(script: Script, replies: list[str], max_steps: int):
    """The text game played again on a rollout's replies (each already the player's whole turn), outside verl:
    its messages and goal verdict."""
    from factory.envs.text_game import TextGame, cut_reply
    from factory.envs.world_env import RefineWorldEnv

    game = TextGame(RefineWorldEnv(max_steps))
    messages = game.start(script)
    for reply in replies:
        assert cut_reply(reply) == reply.strip()  # nothing past the turn was kept
        messages += asyncio.run(game.play(reply, cut=False)).messages
    return messages, game.env.goal_reached


@pytest.mark.local_model
def test_the_embedded_model_plays_the_worlds_through_verl(verl_loop, exported):
    """Two short turns per world for SmolLM2: whatever it says, verl's rollout is the text game's, rewarded by the world."""
    from factory.evaluate import LLMPlayer, llm_config

    root, _ = exported
    player = LLMPlayer(llm_config("local", max_new_tokens=48))
    output, server, _ = roll_out(verl_loop, root, player.act, 2, close=player.close)
    assert len(server.prompts) >= 2
    for i in range(len(output)):
        messages = list(output.non_tensor_batch["rollout_messages"][i])
        script = Script.model_validate_json(output.non_tensor_batch["extra_info"][i]["script"])
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        again, reached = replay_game(script, replies, 2)
        assert 1 <= len(replies) <= 2 and messages == again[: len(messages)]  # the final observation is not sent
        assert output.batch["rm_scores"][i].sum().item() == (1.0 if reached else 0.0)
        assert output.non_tensor_batch["steps"][i] == len(replies)


def dm(check: str, told: str, error: str = "none", done: bool = False) -> dict:
    """A simulator reply on the refine DM's wire keys (factory/envs/simulator.py)."""
    return {"3_dm_thinking": check, "4_observation": told, "5_evaluation": {"error": error, "task_done": done}}


GARDEN_DM = [  # a capable DM's answers to the garden replies' five moves
    dm("The player is in the kitchen. go takes kitchen or garden; attic is not a place: refused (parameter).",
       "There is no attic you can walk to from here.", "parameter"),
    dm("The watering can lies in the kitchen where the player stands: take is allowed.", "You pick up the watering can."),
    dm("water needs the player in the garden; the player is in the kitchen: refused (location).",
       "You can only water the tomatoes in the garden, and you are in the kitchen.", "location"),
    dm("go(place=garden) is always allowed.", "You walk out into the garden."),
    dm("In the garden with the can: water is allowed; tomatoes_watered becomes true, the goal.",
       "You water the tomatoes. The task is done.", done=True),
]  # fmt: skip
ARCHIVE_DM = [  # fly, then take(item=atlas) three times from the hall
    dm("fly is not one of the actions (go, take): refused.", "You cannot fly here; you can go or take.", "unknown_action"),
    *[dm("The atlas lies in the archive, not in the hall: refused (location).", "You do not see the atlas here in the hall.",
         "location")] * 3,
]  # fmt: skip


def test_a_simulated_world_plays_the_rollout_when_the_agent_loop_says_so(verl_loop, exported, server, fast_config):
    """agent_loop.yaml with `world: simulated`: the simulator (over real HTTP) answers every move and its verdict
    is the reward; the policy's side of the rollout is unchanged."""
    from loopback_server import ok

    from factory.envs.verl_agent import close_simulators

    root, _ = exported
    server.route(GARDEN["task"], *[ok(answer) for answer in GARDEN_DM])
    server.route(ARCHIVE["task"], *[ok(answer) for answer in ARCHIVE_DM])
    settings = fast_config().model_dump(include={"model", "base_url", "timeout_s", "max_retries"})
    loops = root / "simulated.yaml"
    loops.write_text("- name: refine_world\n  _target_: factory.envs.verl_agent.RefineWorldAgentLoop\n"
                     f"  world: simulated\n  simulator: {json.dumps(settings)}\n")  # fmt: skip
    output, _, _ = roll_out(verl_loop, root, _scripted, MAX_TURNS, close=close_simulators, agent_loops=loops)
    garden, archive = sample(output, "garden:0"), sample(output, "archive:0")
    assert output.batch["rm_scores"].sum(-1)[[garden, archive]].tolist() == [1.0, 0.0]
    told = [m["content"] for m in output.non_tensor_batch["rollout_messages"][garden][2::2]]
    assert told == [f"Observation: {answer['4_observation']}" for answer in GARDEN_DM[:-1]]
    said = output.non_tensor_batch["rollout_messages"][archive]
    assert said[4]["content"] == "Observation: You cannot fly here; you can go or take."  # after the format error
    assert (
        output.non_tensor_batch["invalid_actions"][archive] == 4
        and not output.non_tensor_batch["world_failed"][archive]
    )
    assert len(server.requests) == len(GARDEN_DM) + len(ARCHIVE_DM)  # one simulator call per move; none for no action
