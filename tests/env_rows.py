"""Refine worlds for the environment tests: scripts, a policy's replies in them, and a run whose RL split holds them.

The run is written as the refine path writes one under `dm_evaluation: world`: the player's moves go
through `grounding.ground_steps` (the world's verdicts and the DM's words), `verify_steps` judges them,
`build_trajectory` makes the turns, and a split filter's verdict sends the trajectory to `rl`. The
replies are what a capable model answers the refine player prompt: a thought, then one action line.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from test_refine_world import GARDEN  # kitchen -> garden with the watering can; goal: tomatoes_watered
from test_train_eval import LIBRARY  # hall -> archive for the atlas; its validation code: one thing at a time

from factory.refine.grounding import ground_steps
from factory.refine.output import build_trajectory
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.refine.verify import verify_steps
from factory.store import Store, utcnow


def declarative(world: dict) -> dict:
    """The world without its actions' validation code: the declarative rules alone judge it."""
    actions = [{key: value for key, value in action.items() if key != "validation_code"} for action in world["actions"]]
    return {**copy.deepcopy(world), "actions": actions}


ARCHIVE = declarative(LIBRARY)  # a declarative world: fetch the atlas from the archive

# Two mistakes corrected on the way to the goal (tests/test_refine_verify.py's GOOD, as replies).
GARDEN_REPLIES = [
    "Thought: The tomatoes are outside, so I should head out to them first.\nAction: go(place=attic)",
    "Thought: There is no attic here. Before going out I should take the watering can from the kitchen.\n"
    "Action: take(item=watering_can)",
    "Thought: I have the watering can now. Two litres should be enough for the tomatoes.\nAction: water(litres=2)",
    "Thought: I have to be in the garden to water the tomatoes. I will walk there.\nAction: go(place=garden)",
    "Thought: Now I am in the garden with the can, so I can water the tomatoes.\nAction: water(litres=2)",
]
# A player that never gets there: no action line, an action the world lacks, then the atlas from the wrong room.
ARCHIVE_REPLIES = [
    "Thought: I should look around the hall before deciding where to go.",
    "Thought: Maybe I can get to the archive faster by flying there.\nAction: fly(to=archive)",
    "Thought: I will simply pick up the atlas.\nAction: take(item=atlas)",
]
_CALL = re.compile(r"^Action: (\w+)\((.*)\)$", re.M)


def steps_of(replies: list[str]) -> list[dict]:
    """The player's moves of a list of replies (each with an action line), as the refine DM receives them."""
    steps = []
    for reply in replies:
        name, args = _CALL.search(reply).groups()
        params = dict(part.split("=", 1) for part in args.split(", ")) if args else {}
        thought = reply.split("\n")[0].removeprefix("Thought: ")
        steps.append({"thought": thought, "action": {"name": name, "params": params}, "dm_thinking": "",
                      "observation": "", "evaluation": {"error": "none", "task_done": False}})  # fmt: skip
    return steps


def refine_turns(script: Script, replies: list[str]) -> list[dict]:
    """The refine path's trajectory for these replies: grounded, verified, built by build_trajectory."""
    grounded = ground_steps(script, [], steps_of(replies), None)
    verdict = verify_steps(script, grounded, min_corrections=0)
    assert verdict.ok, verdict.reason
    trajectory = build_trajectory("refine:t", script, verdict.checks, {"dm_evaluation": "world"})
    return [{"role": t.role, "content": t.content} for t in trajectory.turns]


def add_world(store: Store, persona: str, script: Script, replies: list[str], split: str) -> None:
    """A verified refine trajectory of `script` whose split filter sends it to `split`."""
    grounded = ground_steps(script, [], steps_of(replies), None)
    verdict = verify_steps(script, grounded, min_corrections=0)
    assert verdict.ok, verdict.reason
    save_script(store, f"{persona}:0", persona, 0, script, [])
    trajectory = build_trajectory(f"refine:{persona}", script, verdict.checks, {"dm_evaluation": "world"})
    row = {"trajectory_id": trajectory.id, "source": "refine", "persona_id": persona, "script_id": f"{persona}:0",
           "verified": True, "reason": None, "steps": json.dumps(grounded)}  # fmt: skip
    save_trajectory(store, row, trajectory)
    store.execute("INSERT INTO filter_verdicts (trajectory_id, filter, keep, weight, split, created_at) "
                  "VALUES (?, 'split', true, 1.0, ?, ?)", [trajectory.id, split, utcnow()])  # fmt: skip


def make_world_run(run_dir: Path) -> Path:
    """garden and archive in `rl`; a second garden-like world, roses, in `sft` (an SFT row, not an RL world)."""
    garden, archive = Script.model_validate(GARDEN), Script.model_validate(ARCHIVE)
    roses = Script.model_validate({**copy.deepcopy(GARDEN), "task": "Water the roses in the garden."})
    with Store.open(run_dir) as store:
        add_world(store, "garden", garden, GARDEN_REPLIES, "rl")
        add_world(store, "archive", archive, ["Thought: To the archive.\nAction: go(room=archive)",
                                              "Thought: There it is.\nAction: take(item=atlas)"], "rl")  # fmt: skip
        add_world(store, "roses", roses, GARDEN_REPLIES[1:], "sft")
    return run_dir
