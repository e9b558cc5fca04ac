"""The refine world as an environment (factory/envs): reset, typed steps, the goal's reward, the text game.

Every expectation comes from the world itself (world.step / check_action) or from the refine path's own
trajectory for the same moves (grounding + verify + build_trajectory, tests/env_rows.py), never from
the env under test. The simulated mode is checked with a simulator of this file's own that answers
from the history alone, as factory/envs/simulator.py's does.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
from env_rows import ARCHIVE, GARDEN_REPLIES, refine_turns
from test_refine_world import GARDEN
from test_train_eval import LIBRARY  # its validation code refuses a second item: one thing at a time

from factory.envs.simulator import SIMULATOR_FAILED, SimulatedStep
from factory.envs.text_game import TextGame, cut_reply, format_error, parse_action, turn_end
from factory.envs.world_env import Action, EnvError, RefineWorldEnv
from factory.envs.worlds import RealWorld, SimulatedWorld, make_world
from factory.errors import FactoryError
from factory.refine.narration import opening_observation
from factory.refine.script import Script
from factory.refine.world import WorldState, check_action
from factory.refine.world import step as world_step


@pytest.fixture
def garden():
    return Script.model_validate(GARDEN)


def actions_of(replies: list[str]) -> list[dict]:
    return [parse_action(reply).to_dict() for reply in replies]


def test_reset_gives_the_opening_observation_from_a_script_an_object_or_an_id(garden):
    env = RefineWorldEnv(scripts={"garden:0": garden})
    assert env.reset(garden) == opening_observation(garden) == env.reset("garden:0") == env.reset(copy.deepcopy(GARDEN))
    assert env.steps == 0 and not env.done and env.state == WorldState.initial(garden)
    with pytest.raises(EnvError, match="no script 'lake:0'"):
        env.reset("lake:0")
    with pytest.raises(EnvError, match="declares no goal"):
        env.reset({**copy.deepcopy(GARDEN), "goal": {"conditions": []}})
    with pytest.raises(EnvError, match="not a refine script"):
        env.reset({"task": "x"})


def test_steps_answer_in_the_worlds_words_and_reward_its_goal_verdict(garden):
    env = RefineWorldEnv()
    env.reset(garden)
    results = [env.step(action) for action in actions_of(GARDEN_REPLIES)]
    # The refine path's trajectory for the same moves: the same observations, in the same words.
    said = [turn["content"] for turn in refine_turns(garden, GARDEN_REPLIES)[2::2]]
    assert [f"Observation: {r.observation}" for r in results[:-1]] == said
    assert [r.reward for r in results] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert [r.done for r in results] == [False, False, False, False, True]
    assert [r.info.accepted for r in results] == [False, True, False, True, True]
    assert results[-1].info.task_done and not results[-1].info.truncated and results[-1].info.step == 5
    with pytest.raises(EnvError, match="episode is over after 5"):
        env.step({"name": "go", "params": {"place": "kitchen"}})


def test_a_refused_action_gets_exactly_the_worlds_error(garden):
    env = RefineWorldEnv()
    env.reset(garden)
    state = WorldState.initial(garden)
    for name, params in (("fly", {}), ("go", {"place": "attic"}), ("water", {"litres": "2"}), ("go", {})):
        expected = check_action(garden, state, name, params)
        result = env.step(Action(name, params))
        assert not result.info.accepted and result.info.error_type == expected.error_type
        assert result.observation == result.info.feedback == expected.reason and result.reward == 0.0
        assert env.state == state  # a refused action leaves the world as it was
    assert [h["accepted"] for h in env.history] == [False] * 4


def test_the_step_limit_ends_the_episode_without_reward(garden):
    env = RefineWorldEnv(max_steps=2)
    env.reset(garden)
    first = env.step({"name": "take", "params": {"item": "watering_can"}})
    last = env.no_action("no action line")
    assert not first.done and last.done and last.info.truncated and last.reward == 0.0
    assert last.info.error_type == "format" and last.info.max_steps == 2 and env.state.inventory == ["watering_can"]
    with pytest.raises(EnvError, match="episode is over"):
        env.step({"name": "go", "params": {"place": "garden"}})


def test_bad_use_is_a_one_line_error(garden):
    env = RefineWorldEnv()
    with pytest.raises(EnvError, match="reset the environment"):
        env.step({"name": "go", "params": {}})
    env.reset(garden)
    for bad in ("go(place=garden)", {"params": {}}, {"name": "go", "params": ["garden"]}):
        with pytest.raises(EnvError, match="an action is"):
            env.step(bad)
    with pytest.raises(EnvError, match="at least 1"):
        RefineWorldEnv(max_steps=0)

    async def inside_a_loop():
        with pytest.raises(EnvError, match="await env.astep"):
            env.step({"name": "go", "params": {"place": "garden"}})
        return await env.astep({"name": "go", "params": {"place": "garden"}})

    assert asyncio.run(inside_a_loop()).info.accepted
    assert issubclass(EnvError, FactoryError)
    with pytest.raises(FactoryError, match="unknown environment mode 'dream'"):
        make_world("dream")
    with pytest.raises(FactoryError, match="needs a model to play the world"):
        make_world("simulated")


def test_the_validation_code_refuses_through_the_sandbox_as_the_world_does():
    library = Script.model_validate(LIBRARY)
    env = RefineWorldEnv(world=RealWorld(validation_code=True))
    env.reset(library)
    env.step({"name": "take", "params": {"item": "key"}})
    env.step({"name": "go", "params": {"room": "archive"}})
    refused = env.step({"name": "take", "params": {"item": "atlas"}})
    assert refused.info.error_type == "logic" and "one thing at a time" in refused.observation
    declarative = RefineWorldEnv(world=RealWorld(validation_code=False))
    declarative.reset(library)
    moves = [{"name": "take", "params": {"item": "key"}}, {"name": "go", "params": {"room": "archive"}},
             {"name": "take", "params": {"item": "atlas"}}]  # fmt: skip
    assert [declarative.step(m).reward for m in moves] == [0.0, 0.0, 1.0]  # the rules alone allow it


class ReplayingSimulator:
    """A simulator that knows only the script and the history (as a model playing the world does) and answers
    by replaying the accepted moves through world.step: a perfect model of the world."""

    def __init__(self, fail_at: int | None = None):
        self.histories, self.fail_at = [], fail_at

    async def step(self, script, history, action):
        self.histories.append(history)
        if len(history) == self.fail_at:
            return SimulatedStep(False, "The simulator could not answer.", False, SIMULATOR_FAILED)
        state = WorldState.initial(script)
        for past in history:
            if past["accepted"]:
                state = world_step(script, state, past["action"]["name"], past["action"]["params"]).after
        outcome = RealWorld(False).decide(script, state, action)
        return SimulatedStep(outcome.accepted, outcome.observation, outcome.goal_reached, outcome.error_type)


def test_a_simulated_world_plugs_in_where_the_real_one_plays(garden):
    simulator = ReplayingSimulator()
    real, simulated = RefineWorldEnv(), RefineWorldEnv(world=make_world("simulated", simulator=simulator))
    assert isinstance(simulated.world, SimulatedWorld) and simulated.world.mode == "simulated"
    real.reset(garden), simulated.reset(garden)
    replies = [GARDEN_REPLIES[0], "Thought: let me think.", *GARDEN_REPLIES[1:]]
    game_real, game_sim = TextGame(real), TextGame(simulated)
    for reply in replies:
        a, b = asyncio.run(game_real.play(reply)), asyncio.run(game_sim.play(reply))
        assert a.result == b.result and a.messages == b.messages
    assert simulated.goal_reached and simulated.state is None  # a model playing the world keeps no WorldState
    # The history the simulator read: the earlier moves with what the player was told; no action, no event.
    last = simulator.histories[-1]
    assert [h["action"] for h in last] == actions_of([GARDEN_REPLIES[0], *GARDEN_REPLIES[1:-1]])
    assert [h["accepted"] for h in last] == [False, True, False, True] and all(h["observation"] for h in last)


def test_a_failed_simulator_step_ends_the_episode(garden):
    env = RefineWorldEnv(world=SimulatedWorld(ReplayingSimulator(fail_at=1)))
    env.reset(garden)
    assert not env.step({"name": "take", "params": {"item": "watering_can"}}).done
    failed = env.step({"name": "go", "params": {"place": "garden"}})
    assert failed.done and failed.reward == 0.0 and failed.info.error_type == "simulator_failed"
    assert env.world_failed and not failed.info.truncated


def test_the_text_game_reads_replies_as_the_refine_player_writes_them():
    archive = Script.model_validate(ARCHIVE)
    game = TextGame(RefineWorldEnv())
    opening = game.start(archive)
    assert opening == [{"role": "user", "content": refine_turns(archive, ["Thought: go.\nAction: go(room=archive)",
                                                                        "Thought: take.\nAction: take(item=atlas)"])[0]["content"]}]  # fmt: skip
    invented = "Thought: To the archive.\nAction: go(room=archive)\nObservation: You are in the archive."
    assert cut_reply(invented) == "Thought: To the archive.\nAction: go(room=archive)"
    turn = asyncio.run(game.play(invented))
    assert turn.action == Action("go", {"room": "archive"}) and turn.reply == cut_reply(invented)
    assert turn.messages[0] == {"role": "assistant", "content": cut_reply(invented)}
    muddled = asyncio.run(game.play("I would like to pick up the atlas, please."))
    assert muddled.action is None and muddled.messages[1]["content"] == format_error()
    assert muddled.result.info.error_type == "format" and game.env.steps == 2 and game.env.state.location == "archive"


def test_a_turn_ends_with_its_first_action_line_or_before_an_invented_observation():
    turn = "Thought: To the archive.\nAction: go(room=archive)"
    for went_on in ("\nThought: Then the atlas.\nAction: take(item=atlas)", "\nAction: take(item=atlas)",
                    "\n\n  Observation : You are in the archive.\nAction: take(item=atlas)", "  \n"):  # fmt: skip
        assert turn_end(turn + went_on) == len(turn) and cut_reply(turn + went_on) == turn
    thinking = "Thought: Where is the atlas?\nI do not know yet."
    assert cut_reply(thinking + "\nObservation: The hall is quiet.\nAction: go(room=hall)") == thinking  # no action
    assert cut_reply("Action: go north\nObservation: You go north.") == "Action: go north"  # the real envs' syntax
    game = TextGame(RefineWorldEnv())
    game.start(Script.model_validate(ARCHIVE))
    kept = asyncio.run(game.play(turn + "\n", cut=False))  # verl's loop: the turn as its tokens spell it
    assert kept.reply == turn + "\n" and kept.action == Action("go", {"room": "archive"})
