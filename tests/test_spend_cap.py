"""`--max-cost-usd`: nothing more is sent once the run's recorded spend reaches the cap; the command ends with one
line, keeps every answer, and the same command with a higher cap sends only the rest (real CLI, real HTTP)."""

import subprocess
import sys

import yaml

from factory.store import Store

PER_CALL = (10 * 2.0 + 5 * 4.0) / 1e6  # the loopback server's usage (10 in, 5 out) at the config's price
PRICE = {"input_usd_per_mtok": 2.0, "output_usd_per_mtok": 4.0}


def smoke(server, tmp_path, *flags):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"llm": {"model": "my-finetune", "base_url": server.base_url, "price": PRICE}}))
    command = [sys.executable, "-m", "factory.cli", "smoke", "-q", "-c", str(config), "-n", "10", "--concurrency",
               "1", str(tmp_path / "run"), *flags]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def spent(tmp_path):
    with Store.open(tmp_path / "run", read_only=True) as store:
        return store.query("SELECT count(*), sum(cost_usd) FROM llm_calls WHERE status = 'ok'")[0]


def test_the_cap_stops_sending_and_a_higher_cap_sends_only_the_rest(server, tmp_path):
    capped = smoke(server, tmp_path, "--max-cost-usd", str(3.5 * PER_CALL))
    assert capped.returncode == 2 and "Traceback" not in capped.stderr
    (line,) = capped.stderr.strip().splitlines()
    assert line.startswith("error: spend cap reached: $0.0002 recorded in the run store ") and "cap $0.00014" in line
    assert len(server.requests) == 4  # one call at a time: the 4th took the spend past the cap
    calls, cost = spent(tmp_path)
    assert calls == 4 and abs(cost - 4 * PER_CALL) < 1e-12

    again = smoke(server, tmp_path, "--max-cost-usd", str(3.5 * PER_CALL))  # the store's spend counts: stops at once
    assert again.returncode == 2 and "spend cap reached" in again.stderr and len(server.requests) == 4

    more = smoke(server, tmp_path, "--max-cost-usd", "1")
    assert more.returncode == 0, more.stderr
    assert len(server.requests) == 10  # the 4 answered calls came from the cache
    assert spent(tmp_path)[0] == 10


def test_a_cap_on_a_model_nobody_priced_is_refused_before_any_call(server, tmp_path):
    command = [sys.executable, "-m", "factory.cli", "smoke", "-q", "-n", "2", "--model", "my-finetune", "--base-url",
               server.base_url, str(tmp_path / "run"), "--max-cost-usd", "5"]  # fmt: skip
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and not server.requests
    assert refused.stderr.strip() == (
        "error: --max-cost-usd needs a price for model 'my-finetune', which litellm's price map lacks: "
        "set llm.price (USD per million input and output tokens) in the config"
    )


def test_a_pass_rate_batch_ends_on_the_cap_with_one_line_and_resumes(server, tmp_path):
    """A batch driver lets the cap end the batch (not one failure per slot); the rerun samples only the rest."""
    from loopback_server import Action

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(f'{{"id": "q{i}", "question": "Capital of France? #{i}", "answer": "Paris"}}\n'
                             for i in range(6)))  # fmt: skip
    server.default = Action(content="<answer>Paris</answer>")
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"llm": {"price": PRICE}}))
    command = [sys.executable, "-m", "factory.cli", "passrate", str(tmp_path / "run"), "-c", str(config), "--tasks",
               str(tasks), "--model", "policy", "--base-url", server.base_url, "-q", "--n", "4", "--concurrency", "2",
               "--max-cost-usd"]  # fmt: skip
    capped = subprocess.run([*command, str(5.5 * PER_CALL)], capture_output=True, text=True, timeout=120)
    lines = capped.stderr.strip().splitlines()
    assert capped.returncode == 2 and len(lines) == 1 and "spend cap reached" in lines[0], capped.stderr[-2000:]
    first = server.hashes()
    assert 6 <= len(first) <= 6 + 2  # the calls holding a slot when the cap was reached finish (concurrency 2)
    with Store.open(tmp_path / "run", read_only=True) as store:
        assert store.query("SELECT count(*) FROM rollouts WHERE correct") == [(len(first),)]  # every answer kept

    rest = subprocess.run([*command, "1"], capture_output=True, text=True, timeout=120)
    assert rest.returncode == 0, rest.stderr[-2000:]
    assert not set(server.hashes()[len(first) :]) & set(first) and len(server.hashes()) == 24
