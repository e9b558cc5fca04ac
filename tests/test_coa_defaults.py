"""coa's auto settings (by the run's model) and its per-task wall-clock limit, over real HTTP."""

import json
import math

from loopback_server import ok
from test_coa_mas import (
    ANSWERER,
    CODE,
    PLANNER,
    REFLECTOR,
    VERIFIER,
    answer,
    check,
    code,
    make_config,
    plan,
    reflect,
    rows,
    trace_of,
    write_tasks,
)

from factory.coa import CoaConfig, run_coa
from factory.coa.batch import resolved_config
from factory.coa.defaults import coa_llm, resolve_coa
from factory.failures import failure_sections, format_failures
from factory.llm import LLMConfig
from factory.run_config import FactoryConfig
from factory.store import Store

EMBEDDED_REPLY = {"think": 240, "code": 400, "answer": 120, "comment": 160, "plan_steps": 3}


def test_auto_settings_are_small_on_the_embedded_model_and_paper_sized_otherwise():
    local = resolve_coa(CoaConfig(), LLMConfig(model="local"))
    assert (local.max_steps, local.max_replans, local.max_tokens, local.max_tokens_cap) == (2, 1, 512, 1024)
    assert local.reply_chars.model_dump() == EMBEDDED_REPLY and local.task_timeout_s == 600
    gguf = resolve_coa(CoaConfig(), LLMConfig(model="local:/models/x.gguf"))
    assert gguf.max_tokens == 512
    fewer = resolve_coa(CoaConfig(), LLMConfig(model="local", max_tokens=384, max_tokens_cap=512))
    assert (fewer.max_tokens, fewer.max_tokens_cap) == (384, 512)  # auto is a ceiling on the llm section's

    hosted = resolve_coa(CoaConfig(), LLMConfig(model="openai/gpt-4o-mini", max_tokens=2048, max_tokens_cap=4096))
    assert (hosted.max_steps, hosted.max_replans, hosted.max_tokens, hosted.max_tokens_cap) == (20, 3, 2048, 4096)
    assert hosted.reply_chars.model_dump() == {
        "think": 800,
        "code": 3000,
        "answer": 4000,
        "comment": 600,
        "plan_steps": 12,
    }
    assert (hosted.task_timeout_s, hosted.max_tokens_per_task, hosted.history_chars) == (900, 400_000, 24_000)
    assert (local.max_tokens_per_task, local.history_chars) == (60_000, 6000)


def test_explicit_values_win_over_auto_field_by_field():
    settings = CoaConfig(max_steps=5, max_tokens=900, task_timeout_s=42, reply_chars={"code": 2000})
    resolved = resolve_coa(settings, LLMConfig(model="local"))
    assert (resolved.max_steps, resolved.max_tokens, resolved.task_timeout_s) == (5, 900, 42)
    assert resolved.max_replans == 1 and resolved.max_tokens_cap == 1024  # the others stay auto
    assert resolved.reply_chars.model_dump() == {**EMBEDDED_REPLY, "code": 2000}
    llm = coa_llm(LLMConfig(model="local", max_tokens=4096), resolved)
    assert (llm.max_tokens, llm.max_tokens_cap) == (900, 1024)


def test_a_config_round_trip_keeps_auto_fields_auto():
    # The CLI dumps and re-validates the config: auto (None) must survive, not become a number.
    config = FactoryConfig.model_validate(FactoryConfig().model_dump())
    assert config.coa.max_steps is None and config.coa.reply_chars.think is None


def test_the_embedded_models_auto_choice_is_printed_once_and_recorded(capsys, tmp_path):
    config = FactoryConfig.model_validate({"run_dir": str(tmp_path), "coa": {"max_steps": 3}})
    resolved, settings = resolved_config(config)
    line = capsys.readouterr().err.strip()
    assert line.startswith("coa: auto settings for the embedded model:") and "max_tokens 512" in line
    assert "reply_chars.code 400" in line and "task_timeout_s 600" in line
    assert "max_steps" not in line  # set by the config, not chosen
    assert resolved.coa == settings and settings.max_steps == 3 and settings.max_tokens == 512


def test_a_run_records_its_resolved_settings_and_sends_coa_max_tokens(server, fast_config, tmp_path):
    tasks = write_tasks(
        tmp_path / "m.jsonl", {"id": 1, "question": "2+2?", "answer": "4", "domain": "math", "data_source": "t"}
    )
    server.route(PLANNER, plan())
    server.route(CODE, code("print(2 + 2)"))
    server.route(REFLECTOR, reflect())
    server.route(ANSWERER, answer("4"))
    server.route(VERIFIER, check(4))
    config = make_config(tmp_path, fast_config, tasks, max_tokens=333)
    assert run_coa(config, progress=False).funnel["distilled"] == 1
    assert {r["body"]["max_tokens"] for r in server.requests} == {333}
    with Store.open(config.run_dir) as store:
        (recorded,) = store.query("SELECT config FROM runs WHERE command = 'coa'")[0]
    coa = json.loads(recorded)["coa"]
    assert (coa["max_steps"], coa["max_replans"], coa["max_tokens"], coa["task_timeout_s"]) == (20, 3, 333, 900)
    assert coa["reply_chars"]["code"] == 3000


def two_math_tasks(tmp_path):
    slow = {"id": "slow", "question": "What is 6*7? (slow)", "answer": "42", "domain": "math", "data_source": "t"}
    fast = {"id": "fast", "question": "What is 2+2?", "answer": "4", "domain": "math", "data_source": "t"}
    return write_tasks(tmp_path / "m.jsonl", slow, fast)


def test_a_task_past_its_time_limit_is_a_timeout_row_and_a_rerun_resumes_it(server, fast_config, tmp_path):
    server.route("(slow)", plan("Multiply."), ok({"think": "Compute.", "code": "print(6*7)"}, delay_s=6))
    server.route(PLANNER, plan())
    server.route(CODE, code("print(2 + 2)"), code("print(6 * 7)"))
    server.route(REFLECTOR, reflect(), reflect())
    server.route(ANSWERER, answer("4"), answer("42"))
    server.route(VERIFIER, check(4), check(4))
    config = make_config(tmp_path, fast_config, two_math_tasks(tmp_path), task_timeout_s=2)
    outcome = run_coa(config, progress=False)

    assert outcome.funnel["tasks"] == 2 and outcome.funnel["distilled"] == 1 and outcome.failures == {"timeout": 1}
    slow = next(row for row in rows(config) if row["task_id"] == "t/slow")
    assert not slow["verified"] and slow["rule"] == "timeout"
    assert slow["reason"].startswith(
        "task timed out after 2 s (coa.task_timeout_s); done by then: events 1, tool calls 0"
    )
    with Store.open(config.run_dir, read_only=True) as store:
        (traces,) = failure_sections(store, ["coa"])  # one task, one failure; its cancelled call is none
    assert traces.failed == 1 and [(r.count, r.example_id) for r in traces.reasons] == [(1, "coa:t/slow")]
    text = format_failures(config.run_dir, ["coa"])
    assert "failures, coa/import tasks without a correct verified trajectory: 1\n" in text
    assert "e.g. timeout: task timed out after 2 s (coa.task_timeout_s)" in text
    assert "killed" not in text and "distillation" not in text
    trace = trace_of(config, "coa:t/slow")
    assert trace.status == "timeout" and [e.agent for e in trace.events] == ["planner"]  # what it had done
    assert not math.isclose(trace.duration_s, 0) and trace.duration_s < 6  # cancelled, not waited for

    sent = len(server.requests)
    again = run_coa(
        config.model_copy(update={"coa": config.coa.model_copy(update={"task_timeout_s": 30})}), progress=False
    )
    new = [r["body"]["messages"] for r in server.requests[sent:]]
    assert again.funnel == {"tasks": 2, "answered": 2, "distilled": 2, "correct": 2} and again.failures == {}
    assert not any("(slow)" in json.dumps(m) and PLANNER in json.dumps(m) for m in new)  # the plan came from the cache
    assert all("(slow)" in json.dumps(m) for m in new)  # the finished task was not run again
