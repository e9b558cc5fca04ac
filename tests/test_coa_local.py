"""The Chain-of-Agents path on the embedded SmolLM2 model, for real: a few math tasks.

A 135M model will rarely be right; this proves the path (every role under
constrained decoding, the sandboxed code tool, distillation, the grammar
check, math-verify) on real generations and that the task ends as a row. Its bounds keep it
short and steady: the work is capped by call count and tokens, not by load.
"""

import json

import pytest
from task_files import task_file

from factory.coa import run_coa
from factory.run_config import FactoryConfig
from factory.store import Store

pytestmark = pytest.mark.local_model


def test_a_few_math_tasks_through_the_multi_agent_system_on_the_embedded_model(tmp_path):
    tasks = task_file("math500.parquet")  # ../shared's, or the subset a bare clone ships
    config = FactoryConfig.model_validate({
        "run_dir": str(tmp_path / "run"),
        # One task, one plan step, no re-plan, short replies: SmolLM2 fills a constrained string to its bound,
        # so the bounds, not the sampling, decide the work (at most ~5 calls of <= 256 tokens; 2 tasks took 41-114 s).
        # max_tokens_cap = max_tokens: a cut-off reply is not retried with more room.
        "llm": {"model": "local", "temperature": 0.3, "max_tokens": 256, "max_tokens_cap": 256},
        "coa": {"tasks": str(tasks), "count": 1, "seed": 3, "max_steps": 1, "max_replans": 0,
                "reply_chars": {"think": 120, "code": 240, "answer": 80, "comment": 80, "plan_steps": 1}},
    })  # fmt: skip
    outcome = run_coa(config, progress=False)

    assert outcome.funnel["tasks"] == 1
    with Store.open(config.run_dir, read_only=True) as store:
        rows = store.query("SELECT verified, rule, variant, completion, stats FROM trajectories WHERE source = 'coa'")
        traces = store.query("SELECT count(*) FROM coa_traces")[0][0]
    assert len(rows) == 1 and traces == 1
    for verified, rule, variant, completion, stats in rows:
        assert variant == "code"
        assert verified or rule  # a failure names its grammar rule or run status
        if verified:
            assert completion.rstrip().endswith("</answer>") and "<code>" in completion
            assert "tool_calls_by_type" in json.loads(stats)
