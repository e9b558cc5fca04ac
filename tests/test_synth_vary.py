"""`factory tasks vary` end to end: seeds from a task file, the variant writer over real HTTP (a scripted
loopback server answering as a strong model would), the program run in the sandbox, the kept variant written
as a task row `factory coa` reads back with the answer the program printed."""

import json
import subprocess
import sys

from test_synth_math_code import DIVISOR_PROGRAM, DIVISORS, math_reply

from factory.tasks import load_tasks


def test_a_math_variant_from_the_command_line_is_a_task_whose_answer_the_sandbox_computed(server, tmp_path):
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(json.dumps({"id": "3", "question": DIVISORS, "answer": "9", "domain": "math",
                                 "data_source": "MATH500"}) + "\n")  # fmt: skip
    sweep = "For how many integers n with 1 <= n <= 10000 does n have exactly 9 positive divisors?"
    server.route(DIVISORS, math_reply(sweep, DIVISOR_PROGRAM, "range 10000 9", "seed 196", claimed="31"))
    out = tmp_path / "variants.jsonl"
    args = [sys.executable, "-m", "factory.cli", "tasks", "vary", "--seeds", str(seeds), "--out", str(out),
            "--model", "m", "--base-url", server.base_url, str(tmp_path / "run")]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert "vary: 1 made -> 1 kept" in done.stdout
    (task,) = load_tasks(out)
    assert task.domain == "math" and task.question == sweep and task.answers == ["32"]  # printed, not claimed
    (report,) = [json.loads(line) for line in out.with_name("variants.report.jsonl").read_text().splitlines()]
    assert report["kept"] and set(report["verdicts"]) == {"computed", "consistent", "answer_not_in_question"}

    sent = len(server.requests)
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)  # the run's store answers it
    assert again.returncode == 0 and len(server.requests) == sent

    missing = subprocess.run(args[:6] + [str(tmp_path / "none.jsonl")] + args[7:], capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "none.jsonl" in missing.stderr
