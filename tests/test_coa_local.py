"""The Chain-of-Agents path on the embedded SmolLM2 model, for real: a few math tasks.

A 135M model will rarely be right; this proves the path (every role under
constrained decoding, the sandboxed code tool, distillation, the grammar
check, math-verify) on real generations and that each task ends as a row.
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
        # Tight bounds and two tasks: SmolLM2 fills a constrained string to its bound, and CI has two cores.
        "llm": {"model": "local", "temperature": 0.3, "max_tokens": 384, "max_tokens_cap": 512},
        "coa": {"tasks": str(tasks), "count": 2, "seed": 3, "max_steps": 1, "max_replans": 0,
                "reply_chars": {"think": 240, "code": 400, "answer": 120, "comment": 160}},
    })  # fmt: skip
    outcome = run_coa(config, progress=False)

    assert outcome.funnel["tasks"] == 2
    with Store.open(config.run_dir, read_only=True) as store:
        rows = store.query("SELECT verified, rule, variant, completion, stats FROM trajectories WHERE source = 'coa'")
        traces = store.query("SELECT count(*) FROM coa_traces")[0][0]
    assert len(rows) == 2 and traces == 2
    for verified, rule, variant, completion, stats in rows:
        assert variant == "code"
        assert verified or rule  # a failure names its grammar rule or run status
        if verified:
            assert completion.rstrip().endswith("</answer>") and "<code>" in completion
            assert "tool_calls_by_type" in json.loads(stats)
