"""`factory eval --env`: BabyAI (minigrid) and TextWorld games played through the real loop.

Scripted players solve known seeds with the games' own solvers (minigrid's BabyAI
bot, TextWorld's walkthrough), loop, or answer garbage; the LLM player talks real
HTTP to the loopback server, and one test plays the embedded model for two turns.
"""

import argparse
import json
import sys

import pytest
from loopback_server import ok
from test_report_html import parse

from factory.errors import FactoryError, MissingExtraError
from factory.evaluate import LLMPlayer, llm_config
from factory.evaluate.command import add_eval_parser
from factory.evaluate.envs import evaluate_envs, parse_command, resolve_episodes
from factory.evaluate.envs.command import seed_list
from factory.evaluate.envs.registry import require_envs_extra
from factory.reporting import write_report
from factory.store import Store

BABYAI_NAMES = {0: "turn left", 1: "turn right", 2: "move forward", 3: "pick up", 4: "drop", 5: "toggle", 6: "done"}


class ScriptedPlayer:
    """Replies from a list by turn number, then the last one again."""

    name = "scripted"

    def __init__(self, actions: list[str]):
        self.replies = [f"Thought: next.\nAction: {a}" for a in actions]

    async def act(self, messages):
        turn = sum(m["role"] == "assistant" for m in messages)
        return self.replies[min(turn, len(self.replies) - 1)]


def bot_plan(level: str, seed: int) -> list[str]:
    """minigrid's own BabyAI bot, on its own copy of the seed, as text commands."""
    import gymnasium
    from minigrid.utils.baby_ai_bot import BabyAIBot

    env = gymnasium.make(f"BabyAI-{level}-v0")
    env.reset(seed=seed)
    bot, plan = BabyAIBot(env.unwrapped), []
    while True:
        action = bot.replan()
        plan.append(BABYAI_NAMES[int(action)])
        if any(env.step(action)[2:4]):
            return plan


def play(name: str, actions: list[str], seed: int = 1, max_steps: int = 12):
    (episode,) = resolve_episodes([name], [seed])
    return evaluate_envs([episode], ScriptedPlayer(actions), max_steps=max_steps).episodes[0]


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    """TextWorld games are generated once for the module, into their own cache folder."""
    pytest.importorskip("textworld")
    folder = tmp_path_factory.mktemp("tw-games")
    patch = pytest.MonkeyPatch()
    patch.setenv("FACTORY_ENVS_CACHE", str(folder))
    yield folder
    patch.undo()


def walkthrough(kind: str, level: int, seed: int) -> list[str]:
    from factory.evaluate.envs.textworld_env import TextWorldEnv

    env = TextWorldEnv(kind, level, seed)
    env.reset()
    plan = list(env._state.policy_commands)
    env.close()
    return plan


def test_the_babyai_bot_solves_a_known_seed_and_a_looping_player_does_not():
    pytest.importorskip("minigrid")
    plan = bot_plan("GoToRedBallGrey", 1)
    solved = play("babyai:GoToRedBallGrey", plan)
    assert (solved.status, solved.success, solved.progress, solved.steps) == ("success", True, 1.0, len(plan))
    assert solved.format_errors == 0 and solved.initial_distance == len(plan)
    stuck = play("babyai:GoToRedBallGrey", plan[:2] + ["turn left"], max_steps=10)
    assert (stuck.status, stuck.success, stuck.steps) == ("step_limit", False, 10)
    assert 2 / len(plan) <= stuck.progress < 1.0  # two of the bot's steps were taken
    assert stuck.revisits > 0 and stuck.final_distance is not None


def test_the_babyai_view_names_objects_with_colour_and_position():
    pytest.importorskip("minigrid")
    from factory.evaluate.envs.babyai import BabyAIEnv

    env = BabyAIEnv("GoToLocal", 1)
    opening = env.reset()
    assert env.task == "go to the purple box"
    assert "a purple box 1 step ahead and 1 to the left" in opening and "You are carrying nothing." in opening
    assert "a purple box 1 step to your left" in env.step("move forward").observation
    facing = env.step("turn left")
    assert "a purple box right in front of you" in facing.observation and facing.won and facing.done
    env.close()


def test_a_textworld_walkthrough_wins_and_a_looping_player_makes_no_progress(games):
    plan = walkthrough("coin", 2, 1)
    solved = play("textworld:coin:2", plan)
    assert (solved.status, solved.progress, solved.steps, solved.format_errors) == ("success", 1.0, len(plan), 0)
    stuck = play("textworld:coin:2", ["look"], max_steps=4)
    assert (stuck.success, stuck.progress, stuck.steps, stuck.final_distance) == (False, 0.0, 4, len(plan))
    assert stuck.revisits == 3  # the same state, the same command


def test_cooking_progress_is_the_score(games):
    plan = walkthrough("cooking", 1, 1)
    partial = play("textworld:cooking:1", plan[:1] + ["look"], max_steps=4)
    assert not partial.success and partial.progress == pytest.approx(1 / 3)  # one recipe point of three
    assert partial.transcript[0].action == plan[0]


def test_garbage_and_unavailable_commands_are_format_errors(games):
    replies = ["I think I will dance.", "Action: fly to the moon", "Action: move_forward()", "Action: Turn Left."]
    player = ScriptedPlayer([])
    player.replies = replies
    (episode,) = resolve_episodes(["babyai:GoToRedBallGrey"], [1])
    result = evaluate_envs([episode], player, max_steps=4).episodes[0]
    assert result.format_errors == 2 and [s.outcome for s in result.transcript] == ["format", "format", "ok", "ok"]
    assert [s.action for s in result.transcript] == [None, "fly to the moon", "move forward", "turn left"]
    assert result.transcript[1].reason == "not available"
    coin = play("textworld:coin:2", ["take the coin please"], max_steps=2)
    assert coin.format_errors == 2 and coin.transcript[0].reason == "not available"


def test_parse_command_reads_text_and_call_syntax():
    assert parse_command("Thought: x\nAction: go north") == "go north"
    assert parse_command("Action: take(item='red coin')") == "take red coin"
    assert parse_command("Action: `pick_up()`") == "pick up"
    assert parse_command("Thought: only thinking") is None


def test_an_llm_player_plays_over_http_and_results_land_in_the_run(tmp_path, server, capsys):
    pytest.importorskip("minigrid")
    server.route("go to the red ball", ok("Thought: turn.\nAction: turn left"), ok("Action: move forward"))
    args = _parse(tmp_path / "run", "--env", "babyai:GoToRedBallGrey", "--seeds", "1", "--model", "loopback",
                  "--base-url", server.base_url, "--max-steps", "3")  # fmt: skip
    assert args.func(args) == 0
    (path,) = (tmp_path / "run" / "eval").glob("*.json")
    saved = json.loads(path.read_text())
    assert saved["kind"] == "envs" and saved["env"] == ["babyai:GoToRedBallGrey"] and saved["seeds"] == [1]
    (episode,) = saved["environments"]
    assert [s["action"] for s in episode["transcript"]] == ["turn left", "move forward", None]  # then the default JSON
    assert episode["format_errors"] == 1 and episode["progress"] > 0
    first, second = (r["body"]["messages"] for r in server.requests[:2])
    assert "Task: go to the red ball" in first[0]["content"] and "- turn left:" in first[0]["content"]
    assert second[2]["role"] == "user" and second[2]["content"].startswith("Observation: You see")
    assert "babyai:GoToRedBallGrey:1" in capsys.readouterr().out
    with Store.open(tmp_path / "run", read_only=True) as store:
        assert store.query("SELECT count(*) FROM llm_calls WHERE stage = 'eval'")[0][0] == 3
    page = parse(write_report(tmp_path / "run").read_text(encoding="utf-8"))
    assert page.tables["eval"] == [[path.name, "loopback", "babyai:GoToRedBallGrey", "1", "0.0%",
                                    f"{episode['progress']:.2f}", "1", "3"]]  # fmt: skip


def test_bad_names_seeds_and_a_missing_extra_are_one_line(monkeypatch):
    pytest.importorskip("minigrid")
    for name, message in [("alfworld", "unknown environment"), ("babyai:FlyAway", "no BabyAI-FlyAway-v0"),
                          ("textworld:zork", "challenges are"), ("textworld:cooking:9", "run from 1 to 3")]:  # fmt: skip
        with pytest.raises(FactoryError, match=message):
            resolve_episodes([name], [1])
    assert seed_list("1,3-5") == [1, 3, 4, 5]
    with pytest.raises(argparse.ArgumentTypeError):
        seed_list("one")
    monkeypatch.setitem(sys.modules, "minigrid", None)
    with pytest.raises(MissingExtraError, match=r"needs the \[envs\] extra .*pip install 'factory\[envs\]'"):
        require_envs_extra("babyai")


@pytest.mark.local_model
def test_the_embedded_model_plays_two_turns():
    pytest.importorskip("minigrid")
    (episode,) = resolve_episodes(["babyai:GoToRedBallGrey"], [1])
    player = LLMPlayer(llm_config("local", max_new_tokens=48))
    result = evaluate_envs([episode], player, max_steps=2).episodes[0]
    assert result.status in ("step_limit", "success") and result.steps == len(result.transcript) >= 1
    assert result.format_errors + sum(s.outcome == "ok" for s in result.transcript) == result.steps


def _parse(*argv):
    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers())
    return parser.parse_args(["eval", *map(str, argv)])
