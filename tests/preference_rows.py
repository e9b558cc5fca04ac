"""A run store for the preference exports: refine rows made by the refine path's own code, coa rows, stored pairs.

The refine rows are played in the tomato-watering world of the script writer's own few-shot example
(prompts/refine/script_examples.json), verified by the verifier and built and stored by the refine path's
writers (verify_steps -> build_trajectory -> save_trajectory, steps labelled as the pipeline stores them):

- `refine:tomatoes` is the trajectory prompt's own example (prompts/refine/trajectory_example.json): a
  watering attempt in the kitchen corrected by "I forgot to walk out to the garden. Let me go there." (a
  thought that only reacts), and five litres corrected by "Five litres is more than the can holds. Two
  litres should be enough for these plants." (its second sentence stands on the prompt alone);
- `refine:detour` makes two mistakes in a row, then a correction that works but is off the shortest plan
  (the garden before the can), then one whose thought only answers the refusal.

Beside them the consumer rows (tests/consumer_rows.py: refine rows without a stored script, one ending on
a mistake, and two coa rows), and `preference_pairs` rows as the coa "when to act" stage writes them: a
pair at a coa row's first tool call, a closed-book `when_not_to_act` pair with a system prompt, a KTO-only
row, a pair whose trajectory is not exported, one with a two-message side, and one a stage wrote wrong.

`replayed_run` is the other source: the recorded capable-model replies (benchmarks/data/refine_replay)
played through the refine pipeline itself, with its long prompts and a strong model's corrections.
"""

from __future__ import annotations

import json
from pathlib import Path

from consumer_rows import make_consumer_run
from refine_replay import ReplayServer, load_replay_set, write_personas

from factory.prompts import prompt_file
from factory.refine.batch import run_refine
from factory.refine.output import build_trajectory
from factory.refine.script import Script
from factory.refine.slips import label_slips
from factory.refine.store import save_script, save_trajectory
from factory.refine.verify import verify_steps
from factory.run_config import FactoryConfig
from factory.store import Store, utcnow

REPLAY_SET = Path(__file__).parent.parent / "benchmarks" / "data" / "refine_replay" / "capable_v1"


def tomato_script(persona_id: str) -> Script:
    example = json.loads(prompt_file("refine/script_examples.json").read_text())[0]
    return Script.model_validate({**example, "persona_id": persona_id})


def step(thought: str, name: str, params: dict, observation: str, error: str = "none", done: bool = False) -> dict:
    return {"thought": thought, "action": {"name": name, "params": params}, "dm_thinking": "",
            "observation": observation, "evaluation": {"error": error, "task_done": done}}  # fmt: skip


DETOUR = [
    step("The tomatoes look thirsty, so I will give them two litres right away.", "water", {"litres": 2},
         "You can only water the plants in the garden, and you are in the kitchen.", "location"),
    step("I will grab the hose and reach the beds from the window.", "take", {"item": "hose"},
         "There is no hose in the kitchen; the only thing to carry here is the watering can.", "parameter"),
    step("Right, the plants are outside. I will walk out to the garden where the tomatoes grow.", "go",
         {"place": "garden"}, "You step into the garden. Rows of thirsty tomato plants; the soil is dry."),
    step("I am in the garden now, so one litre should be enough to start.", "water", {"litres": 1},
         "You cup your hands, but you have nothing to carry water in.", "logic"),
    step("The watering can is still in the kitchen. I need to go back for it.", "go", {"place": "kitchen"},
         "You are back in the kitchen. The watering can stands by the sink."),
    step("I will take the watering can from beside the sink.", "take", {"item": "watering_can"},
         "You pick up the watering can and fill it at the sink."),
    step("With the can full, I will carry it out to the tomatoes.", "go", {"place": "garden"},
         "You are in the garden with the full watering can."),
    step("Three litres will soak the dry soil properly.", "water", {"litres": 3},
         "The soil darkens as the tomatoes drink. The tomatoes are watered.", done=True),
]  # fmt: skip


def add_refine_row(store: Store, persona_id: str, steps: list[dict]) -> None:
    """Verify the steps in the tomato world and store the row as the refine pipeline does."""
    script = tomato_script(persona_id)
    verdict = verify_steps(script, steps, min_corrections=2)
    assert verdict.ok, verdict.reason
    save_script(store, f"{persona_id}:0", persona_id, 0, script, [])
    trajectory = build_trajectory(f"refine:{persona_id}", script, verdict.checks, {"dm_evaluation": "llm"})
    row = {"trajectory_id": trajectory.id, "source": "refine", "persona_id": persona_id,
           "script_id": f"{persona_id}:0", "verified": True, "reason": None,
           "steps": json.dumps(label_slips(script, steps))}  # fmt: skip
    save_trajectory(store, row, trajectory)


CALL = "<think>\nA loop checks the formula.\n</think>\n<code>\n```py\nprint(sum(range(1, 200, 2)))\n```\n</code>"
RECALL = "<think>\nThe sum of the first n odd numbers is n squared.\n</think>\n<answer>\n\\boxed{10000}\n</answer>"
CAPITAL = "What is the capital of France?"


def pair_row(pair_id: str, kind: str, prompt, chosen, rejected, trajectory_id=None, task_id=None) -> dict:
    encode = lambda value: value if value is None or isinstance(value, str) else json.dumps(value)  # noqa: E731
    return {"pair_id": pair_id, "kind": kind, "source": "coa", "task_id": task_id, "trajectory_id": trajectory_id,
            "prompt": encode(prompt), "chosen": encode(chosen), "rejected": encode(rejected),
            "evidence": json.dumps({"recall": {"model": "test"}}), "created_at": utcnow()}  # fmt: skip


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def assistant(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def stored_pairs() -> list[dict]:
    odd = user("What is the sum of the first 100 odd numbers? Use code.")
    system = [{"role": "system", "content": "Answer from what you know when you are sure; otherwise use a tool."}]
    return [
        pair_row("coa:odd#when_to_act", "when_to_act", odd, assistant(CALL), assistant(RECALL), "coa:odd", "coa:odd"),
        pair_row("task:capital#when_not_to_act", "when_not_to_act", system + user(CAPITAL),
                 assistant("<think>\nParis is the capital of France.\n</think>\n<answer>\nParis\n</answer>"),
                 assistant("<think>\nLet me look it up.\n</think>\n<web_search>\ncapital of France\n</web_search>"),
                 task_id="task:capital"),
        pair_row("coa:odd2#when_to_act", "when_to_act", user("Sum the odd numbers below 200."), None,
                 assistant(RECALL), "coa:odd2", "coa:odd2"),
        pair_row("coa:gone#when_to_act", "when_to_act", odd, assistant(CALL), assistant(RECALL), "coa:gone", "coa:gone"),
        pair_row("coa:odd#two_turns", "when_to_act", odd, assistant(CALL) + [{"role": "tool", "content": "10000"}],
                 assistant(RECALL), "coa:odd", "coa:odd"),
        pair_row("coa:odd#broken", "when_to_act", odd, "{not json", assistant(RECALL), "coa:odd", "coa:odd"),
    ]  # fmt: skip


def make_preference_run(run_dir: Path, stored: bool = True) -> Path:
    make_consumer_run(run_dir)
    with Store.open(run_dir) as store:
        add_refine_row(
            store, "tomatoes", json.loads(prompt_file("refine/trajectory_example.json").read_text())["steps"]
        )
        add_refine_row(store, "detour", DETOUR)
        store.upsert("trajectories", {"trajectory_id": "coa:gone", "source": "coa", "task_id": "coa:gone",
                                      "verified": False, "reason": "no answer", "created_at": utcnow()})  # fmt: skip
        for row in stored_pairs() if stored else []:
            store.upsert("preference_pairs", row)
    return run_dir


def replayed_run(folder: Path) -> Path:
    """The recorded capable-model set played through the refine pipeline over loopback HTTP (as
    tests/test_refine_replay.py runs it): 22 verified trajectories with the mistakes a strong model writes."""
    recordings = load_replay_set(REPLAY_SET)
    server = ReplayServer(recordings)
    base_url = server.start_in_thread()
    personas = write_personas(recordings, folder / "personas.jsonl")
    config = FactoryConfig.model_validate({
        "run_dir": str(folder / "run"),
        "llm": {"model": "replay", "base_url": base_url, "cache": False, "max_retries": 0},
        "refine": {"personas": str(personas), "count": len(recordings), "with_code": False, "dm_evaluation": "llm"},
    })  # fmt: skip
    try:
        run_refine(config, progress=False)
    finally:
        server.stop()
    return folder / "run"
