"""The AgentRefine path end to end on the embedded SmolLM2 model, for real.

A 135M model is a smoke-test generator: this proves the whole path (script
schema under constrained decoding, the world-judged DM, the verifier, the
store) on real generations, not that the model writes good data.
"""

import json

import pytest

from factory.refine.batch import run_refine
from factory.settings import FactoryConfig
from factory.store import Store

pytestmark = pytest.mark.local_model


def test_two_personas_through_the_refine_path_on_the_embedded_model(tmp_path):
    config = FactoryConfig.model_validate({
        "run_dir": str(tmp_path / "run"),
        "llm": {"model": "local", "temperature": 0.7},
        "refine": {"count": 2, "seed": 1, "with_code": False, "dm_evaluation": "world", "max_steps": 6},
    })  # fmt: skip
    outcome = run_refine(config, progress=False)

    assert outcome.funnel["personas"] == 2 and outcome.funnel["scripts"] == 2
    with Store.open(config.run_dir, read_only=True) as store:
        rows = store.query("SELECT verified, reason, llm_calls, steps, conversations FROM trajectories")
        scripts = store.query("SELECT verified, problems FROM scripts")
        calls = store.query("SELECT count(*), count(*) FILTER (status = 'ok') FROM llm_calls")[0]
    assert len(rows) == 2 and all(1 <= r[2] <= 4 for r in rows)  # the budget holds, script included
    assert calls[0] == sum(r[2] for r in rows) and calls[1] >= 2
    assert all(ok or json.loads(problems) for ok, problems in scripts)  # a rejected script says why
    for verified, reason, _, steps, conversations in rows:
        assert verified == (reason is None)
        if verified:
            turns = json.loads(conversations)
            assert any(t["from"] == "gpt" and not t["loss"] for t in turns)  # mistakes stay out of the loss
        elif steps:  # a failed trajectory keeps its last attempt and a verifier rule as the reason
            assert reason.split(":")[0] in {"not_done", "too_few_corrections", "format", "llm schema", "llm length"}
