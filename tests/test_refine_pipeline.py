"""The refine loop over real HTTP: scripted script and trajectory replies."""

import asyncio
import copy
import json

from loopback_server import Action, ok
from test_refine_verify import GOOD, step
from test_refine_world import GARDEN

from factory.llm import LLMClient
from factory.refine.config import RefineConfig
from factory.refine.pipeline import refine_one
from factory.refine.prose import WORDS
from factory.refine.schemas import to_wire
from factory.refine.store import refine_funnel, rule_losses
from factory.store import Store

SCRIPT_MARK = "Write a script for an adventure"
TRAJ_MARK = "Available actions:"


def replies(steps):
    """A scripted trajectory reply, in the wire form the model writes."""
    return ok({"steps": [to_wire(s) for s in steps]})


def go(config, store, settings, persona="p1", checker=None):
    async def run():
        async with LLMClient(config, store) as llm:
            return await refine_one(llm, store, persona, "A gardener in Porto.", settings, checker)

    return asyncio.run(run())


# GOOD as a model can write it (its 'attic' is not in the wire's vocabulary): two mistakes of its own.
PLAYED = [step("water", {"litres": 5}, error="parameter"), *GOOD[1:]]
CLEAN = [
    step("take", {"item": "watering_can"}),
    step("go", {"place": "garden"}),
    step("water", {"litres": 2}, done=True),
]


def test_a_clean_play_gets_mistakes_injected_inside_it_and_continues(server, fast_config, tmp_path):
    from test_refine_inject import WorldPlayer

    from factory.refine.script import Script

    player = WorldPlayer(Script.model_validate(GARDEN))
    server.content = player  # the continuation is played from wherever the injection leaves the world
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(TRAJ_MARK, replies(CLEAN))  # the model's own play: right, but with no mistake
    store = Store(tmp_path / "r.sqlite")
    settings = RefineConfig(with_code=False, seed=3, mistake_counts={2: 1}, first_move_mistakes=0.0)
    assert go(fast_config(), store, settings)

    prompt = server.requests[2]["body"]["messages"][1]["content"]
    assert "The story so far" in prompt and "<missing thought 1: why the player tries this move>" in prompt
    (turns, conversations, calls, corrections) = store.query(
        "SELECT turns, conversations, llm_calls, n_corrections FROM trajectories WHERE verified"
    )[0]
    steps = json.loads(store.query("SELECT steps FROM trajectories")[0][0])
    conversations = json.loads(conversations)
    assert calls == 3 and corrections == 2  # script, the play, one continuation for both mistakes
    assert conversations[0]["from"] == "human" and "Task: Water the tomatoes" in conversations[0]["value"]
    gpt = [c for c in conversations if c["from"] == "gpt"]
    injected = [bool(s.get("injected")) for s in steps]
    assert injected == [False, True, False, True, False]  # inside the play: after take and after go
    assert [c["loss"] for c in gpt] == [not i for i in injected]  # the first move trains, no mistake does
    assert gpt[1]["error"]["type"] in ("parameter", "location", "logic") and gpt[1]["error"]["feedback"]
    assert steps[0]["thought"] == "I will take." and steps[2].get("rewritten_thought")  # the correction's new thought
    assert {steps[1]["thought"], steps[2]["thought"], steps[3]["thought"]} <= set(player.written)
    assert all(not c["loss"] for c in conversations if c["from"] == "human")
    assert refine_funnel(store) == {
        "personas": 1,
        "scripts": 1,
        "verified_scripts": 1,
        "trajectories": 1,
        "verified": 1,
    }


def test_a_failed_check_continues_from_the_verified_prefix(server, fast_config, tmp_path):
    unflagged = step("water", {"litres": 2})  # at the kitchen: a location error the DM misses
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(TRAJ_MARK, replies([PLAYED[0], PLAYED[1], unflagged]), replies(PLAYED[2:]))
    store = Store(tmp_path / "r.sqlite")
    assert go(fast_config(), store, RefineConfig(with_code=False, injection=False))
    verdicts = store.query("SELECT attempt, ok, rule, failed_step FROM verdicts ORDER BY attempt")
    assert verdicts == [(0, False, "unflagged_error", 2), (1, True, None, None)]
    assert "The story so far" in server.requests[2]["body"]["messages"][1]["content"]
    steps = json.loads(store.query("SELECT steps FROM trajectories")[0][0])
    assert [s["action"]["name"] for s in steps] == ["water", "take", "water", "go", "water"]


def test_after_a_failed_check_mistakes_go_inside_the_verified_prefix(server, fast_config, tmp_path):
    from test_refine_inject import WorldPlayer

    from factory.refine.script import Script

    server.content = WorldPlayer(Script.model_validate(GARDEN))
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(
        TRAJ_MARK, replies([CLEAN[0], CLEAN[1], step("take", {"item": "watering_can"})])
    )  # not here: unflagged
    store = Store(tmp_path / "r.sqlite")
    settings = RefineConfig(with_code=False, seed=1, mistake_counts={2: 1}, first_move_mistakes=0.0)
    assert go(fast_config(), store, settings)
    assert store.query("SELECT attempt, ok, rule FROM verdicts ORDER BY attempt")[0] == (0, False, "unflagged_error")
    steps = json.loads(store.query("SELECT steps FROM trajectories")[0][0])
    assert [s.get("injected") is not None for s in steps[:4]] == [False, True, False, True]  # take, ✗, go, ✗
    assert [s["action"]["name"] for s in steps if not s.get("injected")] == ["take", "go", "water"]


def test_budget_runs_out_on_garbage_and_the_failure_is_recorded(server, fast_config, tmp_path):
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(TRAJ_MARK, *[ok("not json at all")] * 20)
    store = Store(tmp_path / "r.sqlite")
    assert not go(fast_config(max_parse_retries=0), store, RefineConfig(with_code=False, budget=3))
    (verified, reason, calls) = store.query("SELECT verified, reason, llm_calls FROM trajectories")[0]
    assert not verified and reason.startswith("llm schema") and calls == 3
    assert rule_losses(store) == {"llm_error": 2}


def test_a_script_that_never_verifies_ends_the_persona(server, fast_config, tmp_path):
    server.route(SCRIPT_MARK, *[Action(status=500)] * 30)
    store = Store(tmp_path / "r.sqlite")
    assert not go(fast_config(max_retries=0), store, RefineConfig(with_code=False, script_tries=2))
    assert store.query("SELECT reason, llm_calls FROM trajectories") == [("no verified script", 2)]
    assert refine_funnel(store)["scripts"] == 1 and refine_funnel(store)["verified_scripts"] == 0


def test_validation_code_is_verified_in_the_sandbox_and_bad_code_is_fed_back(server, fast_config, tmp_path):
    from factory.paths import prompts_dir
    from factory.refine.validation_code import SandboxCodeChecker

    with_code = json.loads((prompts_dir() / "refine" / "script_examples.json").read_text())[0]
    lenient = copy.deepcopy(with_code)
    lenient["actions"][0]["validation_code"] = "def validate(params, state):\n    return True"
    server.route(SCRIPT_MARK, ok(lenient), ok(with_code))
    server.route(TRAJ_MARK, replies(PLAYED))
    store = Store(tmp_path / "r.sqlite")
    settings = RefineConfig(with_code=True, seed=3, mistake_counts={2: 1})  # the model's own two mistakes suffice
    assert go(fast_config(), store, settings, checker=SandboxCodeChecker())
    scripts = store.query("SELECT attempt, verified, problems FROM scripts ORDER BY attempt")
    assert scripts[0][:2] == (0, False) and "accepts invalid place" in scripts[0][2]
    assert scripts[1][:2] == (1, True)
    assert "accepts invalid place" in server.requests[1]["body"]["messages"][-1]["content"]  # fed back


def test_the_verifier_asks_the_validation_code_about_each_step(tmp_path):
    from factory.paths import prompts_dir
    from factory.refine.script import Script
    from factory.refine.validation_code import SandboxCodeChecker
    from factory.refine.verify import verify_steps

    data = json.loads((prompts_dir() / "refine" / "script_examples.json").read_text())[0]
    data["actions"][2]["validation_code"] = "def validate(params, state):\n    return int(params['litres']) < 2"
    script = Script.model_validate(data)
    verdict = verify_steps(script, GOOD, extra=SandboxCodeChecker.step_check(script))
    assert verdict.rule == "unflagged_error" and verdict.failed_step == 4


def test_factory_refine_and_show_from_the_command_line(server, tmp_path):
    import subprocess
    import sys

    server.route(SCRIPT_MARK, *[ok(GARDEN)] * 3)
    server.route(TRAJ_MARK, *[replies(PLAYED)] * 3)
    run_dir = tmp_path / "run"
    args = [sys.executable, "-m", "factory.cli", "refine", "-q", "--count", "2", "--no-code", "--model", "m",
            "--base-url", server.base_url, str(run_dir)]  # fmt: skip
    first = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "funnel: personas 2 -> scripts 2 -> verified scripts 2 -> trajectories 2 -> verified 2" in first.stdout
    sent = len(server.requests)
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and len(server.requests) == sent  # finished personas are skipped

    with Store.open(run_dir, read_only=True) as store:
        persona_id = store.query("SELECT persona_id FROM trajectories ORDER BY 1 LIMIT 1")[0][0]
    shown = subprocess.run([sys.executable, "-m", "factory.cli", "show", str(run_dir), persona_id],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert shown.returncode == 0 and "verified" in shown.stdout
    assert "error, loss=false]" in shown.stdout and "[gpt ✓ loss=true]" in shown.stdout


def test_world_judged_dm_fixes_the_llms_evaluations_and_ends_at_the_goal(server, fast_config, tmp_path):
    misjudged = [
        step("water", {"litres": 5}),  # a parameter error the LLM's DM misses
        step("take", {"item": "watering_can"}, error="logic"),  # a false alarm
        step("water", {"litres": 2}),  # a location error, missed again
        step("go", {"place": "garden"}),
        step("water", {"litres": 2}),  # sets tomatoes_watered: the goal holds, the DM forgot to say so: the end
        step("go", {"place": "kitchen"}, done=True),  # after the end: cut
    ]
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(TRAJ_MARK, replies(misjudged))
    store = Store(tmp_path / "r.sqlite")
    settings = RefineConfig(with_code=False, injection=False, dm_evaluation="world")
    assert go(fast_config(), store, settings)
    steps = json.loads(store.query("SELECT steps FROM trajectories WHERE verified")[0][0])
    assert [s["evaluation"]["error"] for s in steps] == ["parameter", "none", "location", "none", "none"]
    assert steps[-1]["action"]["name"] == "water" and steps[-1]["evaluation"]["task_done"]
    told = [s["observation"] for s in steps]
    assert "litres" in told[0] and "5" in told[0]  # the DM's voice, display names (wording varies)
    assert "in the garden" in told[2] and "the kitchen" in told[2] and "_" not in "".join(told)
    # an accepted move is narrated by the world, never by the model (whose DM text said "You are in the garden."),
    # and says only what changed: the can is held now; the room is described on arriving in the garden
    assert "watering can" in told[1] and "A small kitchen" not in told[1] and "worked" not in told[1]
    assert "the garden" in told[3] and "Rows of tomatoes." in told[3]
    assert "tomatoes are now watered" in told[4]  # what became true, and that the task is done:
    assert told[4].endswith(tuple(WORDS["done"]))
    assert "the rules refuse" in steps[2]["dm_thinking"] and "go(place=garden)" in steps[2]["dm_thinking"]
    conversations = json.loads(store.query("SELECT conversations FROM trajectories")[0][0])
    assert conversations[0]["value"].endswith(
        "You are in the kitchen. A small kitchen. You see the watering can. You are carrying nothing."
    )
    assert conversations[2]["value"] == f"Observation: {told[0]}"  # the world's feedback is what the player reads
    provenance = json.loads(store.query("SELECT stats FROM trajectories WHERE verified")[0][0])["provenance"]
    assert provenance["dm_evaluation"] == "world" and provenance["script_source"] == "llm"  # kept with the row
    assert provenance["trajectory_source"] == "llm"  # any model but the embedded one plays its own trajectories


def test_the_llm_judges_by_default_and_its_misjudgements_fail(server, fast_config, tmp_path):
    server.route(SCRIPT_MARK, ok(GARDEN))
    server.route(TRAJ_MARK, *[replies([step("water", {"litres": 5})] * 2)] * 4)
    store = Store(tmp_path / "r.sqlite")
    assert not go(fast_config(), store, RefineConfig(with_code=False, injection=False, budget=2))
    assert rule_losses(store) == {"unflagged_error": 1}
