"""What trains in a verl rollout of a refine world when the policy or the world misbehaves (issue 29's review).

- A policy trained on whole trajectories goes on past its turn: it invents the DM's next `Observation:`,
  or writes a second Thought and Action. The game reads only the turn; the tokens that train must be
  exactly that turn (and the tokens factory.mask.render trains on the rollout's messages), never the invented rest.
- A simulated world that fails (an outage, an unreadable verdict) says nothing about the policy: that
  rollout must not train at all.

verl's own RLHFDataset, collate_fn and AgentLoopWorker run the rollouts (tests/verl_rollout.py); the LLM
server stand-in honours `stop` strings as vLLM does (the token completing the string ends the reply, no
<|im_end|>), so the invented observation reaches the loop as vLLM would send it.
"""

from __future__ import annotations

import json

import pytest
from env_rows import ARCHIVE_REPLIES, GARDEN_REPLIES, make_world_run, refine_turns
from test_refine_world import GARDEN
from verl_rollout import agent_loop_worker, roll_out

from factory.export import ExportOptions, export_dataset
from factory.export.verl import RLOptions
from factory.refine.script import Script

for needed in ("verl", "hydra", "codetiming", "cachetools"):
    pytest.importorskip(needed, reason="verl and what its agent loop imports are installed with --no-deps (README)")

pytestmark = pytest.mark.filterwarnings(r"ignore:hydra.utils.instantiate\(\) resolved _target_:UserWarning")
MAX_TURNS = 5

# The garden replies as a model that learned whole trajectories writes them: it goes on with the DM's answer
# (in the world's own words or its own guess) or with its next move.
GARDEN_RUNNING_ON = [
    GARDEN_REPLIES[0] + "\nObservation: You climb the narrow stairs up to the attic.",
    GARDEN_REPLIES[1] + "\nThought: With the can in hand I can go out to the tomatoes.\nAction: go(place=garden)",
    GARDEN_REPLIES[2],
    GARDEN_REPLIES[3] + "\n\nObservation: You step out into the garden.\nThought: Now I water them.\n"
    "Action: water(litres=2)",
    GARDEN_REPLIES[4] + "\nObservation: You water the tomatoes. The task is done.",
]
ARCHIVE_RUNNING_ON = [
    ARCHIVE_REPLIES[0] + "\nObservation: The hall is quiet; a door leads to the archive.",
    ARCHIVE_REPLIES[1] + "\nAction: go(room=archive)",
    ARCHIVE_REPLIES[2],
]


def running_on(messages: list[dict]) -> str:
    replies = GARDEN_RUNNING_ON if GARDEN["task"] in messages[1]["content"] else ARCHIVE_RUNNING_ON
    return replies[min(sum(m["role"] == "assistant" for m in messages), len(replies) - 1)]


@pytest.fixture(scope="module")
def verl_loop():
    return agent_loop_worker()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("worlds")
    options = ExportOptions(formats=["sharegpt"], validation=0)
    export_dataset(make_world_run(root / "run"), root / "out", options, rl=RLOptions())
    return root


def sample(output, script_id: str) -> int:
    return next(i for i, info in enumerate(output.non_tensor_batch["extra_info"]) if info["script_id"] == script_id)


def trained_runs(mask: list[int]) -> list[list[int]]:
    """The response positions that train, as runs of consecutive positions (one run per assistant turn)."""
    runs: list[list[int]] = []
    for position, trains in enumerate(mask):
        if trains:
            if runs and runs[-1][-1] == position - 1:
                runs[-1].append(position)
            else:
                runs.append([position])
    return runs


def test_only_the_turn_the_game_read_trains(verl_loop, exported):
    from factory.envs.text_game import cut_reply
    from factory.mask.render import IGNORE, render

    async def policy(messages):
        return running_on(messages)

    output, server, tokenizer = roll_out(verl_loop, exported, policy, MAX_TURNS)
    garden = sample(output, "garden:0")
    assert list(output.non_tensor_batch["rollout_messages"][garden]) == refine_turns(
        Script.model_validate(GARDEN), GARDEN_REPLIES
    )  # the cut replies are the clean ones: the same moves, the same world's answers
    assert output.batch["rm_scores"][garden].sum().item() == 1.0
    width, end = output.batch["prompts"].shape[1], tokenizer.convert_tokens_to_ids("<|im_end|>")
    for i, raw in ((garden, GARDEN_RUNNING_ON), (sample(output, "archive:0"), ARCHIVE_RUNNING_ON)):
        keep = output.batch["attention_mask"][i].bool()
        ids, messages = output.batch["input_ids"][i][keep].tolist(), output.non_tensor_batch["rollout_messages"][i]
        said = [m["content"] for m in messages if m["role"] == "assistant"]
        rendered = render({"messages": messages}, tokenizer)
        assert ids == rendered.input_ids[: len(ids)] and tokenizer.decode(rendered.input_ids[len(ids) :]) in ("", "\n")
        offset = keep[:width].sum().item()
        runs = trained_runs(output.batch["response_mask"][i].tolist())
        labelled = trained_runs([int(label != IGNORE) for label in rendered.labels])
        assert len(runs) == len(labelled) == len(said)
        for turn, (run, marked) in enumerate(zip(runs, labelled)):
            reply = raw[min(turn, len(raw) - 1)]
            assert tokenizer.decode([ids[offset + p] for p in run], skip_special_tokens=True) == said[turn]
            assert said[turn] == cut_reply(reply)
            # render trains each turn's <|im_end|>; a cut turn's was appended by the loop, not sampled: untrained
            assert [offset + p for p in run] == (marked[:-1] if said[turn] != reply else marked)
            assert ids[marked[-1]] == end
    assert all("\nObservation:" in params["stop"] for params in server.sampling)  # the server is asked to stop there
    assert output.non_tensor_batch["cut_turns"][garden] == 4


GARDEN_DM = [  # the simulator's answers to the garden's first two moves; the third call meets an outage
    {"3_dm_thinking": "go takes kitchen or garden; attic is not a place: refused (parameter).",
     "4_observation": "There is no attic you can walk to from here.",
     "5_evaluation": {"error": "parameter", "task_done": False}},
    {"3_dm_thinking": "The watering can lies in the kitchen where the player stands: take is allowed.",
     "4_observation": "You pick up the watering can.", "5_evaluation": {"error": "none", "task_done": False}},
]  # fmt: skip
ARCHIVE_DM = [
    {"3_dm_thinking": "fly is not one of the actions (go, take): refused.",
     "4_observation": "You cannot fly here; you can go or take.",
     "5_evaluation": {"error": "unknown_action", "task_done": False}},
    *[{"3_dm_thinking": "The atlas lies in the archive, not in the hall: refused (location).",
       "4_observation": "You do not see the atlas here in the hall.",
       "5_evaluation": {"error": "location", "task_done": False}}] * 3,
]  # fmt: skip


def test_a_rollout_whose_world_failed_does_not_train(verl_loop, exported, server, fast_config):
    from loopback_server import Action, ok

    from factory.envs.verl_agent import close_simulators

    server.route(GARDEN["task"], *map(ok, GARDEN_DM), Action(status=503))
    server.route("Fetch the atlas", *map(ok, ARCHIVE_DM))
    settings = fast_config(max_retries=0).model_dump(include={"model", "base_url", "timeout_s", "max_retries"})
    loops = exported / "simulated.yaml"
    loops.write_text("- name: refine_world\n  _target_: factory.envs.verl_agent.RefineWorldAgentLoop\n"
                     f"  world: simulated\n  simulator: {json.dumps(settings)}\n")  # fmt: skip

    async def policy(messages):
        return running_on(messages)

    output, _, _ = roll_out(verl_loop, exported, policy, MAX_TURNS, close=close_simulators, agent_loops=loops)
    garden, archive = sample(output, "garden:0"), sample(output, "archive:0")
    assert output.non_tensor_batch["steps"][garden] == 3  # the third move met the outage and ended the episode
    assert output.batch["response_mask"][garden].sum().item() == 0  # nothing of the failed rollout trains
    assert output.batch["response_mask"][archive].sum().item() > 0 and output.batch["rm_scores"][garden].sum() == 0
    info = {key: output.non_tensor_batch[key][[garden, archive]].tolist() for key in ("world_failed", "trained")}
    assert info == {"world_failed": [True, False], "trained": [False, True]}
