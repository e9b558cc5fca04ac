"""The procedural script source: seeded, persona-themed, and held to an LLM script's checks."""

import asyncio

import pytest

from factory.cli import build_parser
from factory.personas import load_library
from factory.refine.batch import script_source
from factory.refine.config import RefineConfig
from factory.refine.pipeline import Spend, write_script
from factory.refine.procedural import build_script, persona_role, pick_theme
from factory.refine.script import script_problems
from factory.refine.solvable import shortest_plan, solvability_problems
from factory.refine.store import save_script
from factory.run_config import FactoryConfig, config_from_args
from factory.store import Store


def test_every_library_persona_gets_a_script_that_passes_the_llm_scripts_checks():
    for persona in load_library():
        script = build_script(persona.id, persona.text)
        assert script_problems(script) == [] and solvability_problems(script, require_goal=True) == []


def test_the_task_ends_with_the_action_that_completes_it():
    script = build_script("p1", "An auto mechanic in Mumbai, 43 years old, whose work means diagnosing engine faults.")
    plan = shortest_plan(script)
    assert len(plan) == 4
    last = script.action(plan[-1][0])
    assert [e.kind for e in last.effects] == ["set_fact"]
    assert script.goal.conditions[0].value == last.effects[0].value
    assert script.task.startswith("You are an auto mechanic.")


def test_same_persona_and_seed_give_the_same_script_another_seed_may_not():
    text = "A restaurant chef in Lyon who is learning to bake sourdough."
    assert build_script("p1", text, 0) == build_script("p1", text, 0)
    assert len({build_script("p1", text, seed).model_dump_json() for seed in range(8)}) > 1


def test_the_persona_s_words_pick_the_theme():
    import random

    assert pick_theme("A restaurant chef who bakes", random.Random(0))["name"] == "kitchen"
    assert pick_theme("A starship quartermaster", random.Random(0))["name"] == "starship"
    assert pick_theme("Someone", random.Random(0))["name"] == "home"  # nothing matches: the fallback
    assert persona_role("A retired documentary filmmaker in Tbilisi, 88") == "retired documentary filmmaker"
    assert persona_role("loves jazz") is None


@pytest.mark.parametrize(("model", "scripts", "expected"), [
    ("local", "auto", "procedural"), ("gpt-4o", "auto", "llm"), ("local:/m.gguf", "auto", "llm"),
    ("local", "llm", "llm"), ("gpt-4o", "procedural", "procedural"),
])  # fmt: skip
def test_auto_is_procedural_only_on_the_embedded_model(model, scripts, expected):
    config = FactoryConfig.model_validate({"llm": {"model": model}, "refine": {"scripts": scripts}})
    assert script_source(config) == expected


def test_the_cli_flag_sets_the_script_source():
    args = build_parser().parse_args(["refine", "--scripts", "procedural", "/tmp/unused"])
    assert config_from_args(args).refine.scripts == "procedural"
    assert config_from_args(build_parser().parse_args(["refine"])).refine.scripts == "auto"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["refine", "--scripts", "human"])


def test_write_script_stores_a_labelled_verified_script_without_an_llm_call(tmp_path):
    settings = RefineConfig(scripts="procedural", with_code=False)
    spend = Spend()
    with Store.open(tmp_path) as store:  # llm=None: any LLM call would raise
        script, script_id = asyncio.run(write_script(None, store, "p7", "A florist in Porto.", settings, None, spend))
        rows = store.query("SELECT script_id, attempt, verified, problems, script IS NOT NULL FROM scripts")
    assert script is not None and script_id == "p7:procedural" and spend.calls == 0
    assert rows == [("p7:procedural", 0, True, "[]", True)]


def test_a_procedural_script_is_stored_like_an_llm_one(tmp_path):
    script = build_script("p8", "A forester in Oregon.")
    with Store.open(tmp_path) as store:
        save_script(store, "p8:procedural", "p8", 0, script, [])
        (body,) = store.query("SELECT script FROM scripts")[0]
    assert type(script).model_validate_json(body) == script
