"""The CLI is a thin layer over the Python API; errors are one line."""

import json
import subprocess
import sys

import pytest

from factory.cli import main
from factory.errors import FactoryError

COMMANDS = ["smoke", "ping", "calls"]


def factory_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "factory.cli", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", [[], *[[c] for c in COMMANDS]])
def test_help_on_every_command(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    assert "usage: factory" in capsys.readouterr().out


def test_smoke_then_calls_summary(server, tmp_path):
    run_dir = tmp_path / "run"
    smoke = factory_cli("smoke", "-q", "-n", "5", "--model", "m", "--base-url", server.base_url, str(run_dir))
    assert smoke.returncode == 0, smoke.stderr
    assert smoke.stdout.count('"name":"track_parcel"') == 5
    assert "calls: 5 (5 ok)" in smoke.stdout

    again = factory_cli("smoke", "-q", "-n", "5", "--model", "m", "--base-url", server.base_url, str(run_dir))
    assert again.returncode == 0 and len(server.requests) == 5  # all five answered from the store

    calls = factory_cli("calls", str(run_dir), "--json")
    summary = json.loads(calls.stdout)
    assert summary["calls"] == 5 and summary["cache_hits"] == 5 and summary["errors"] == {}
    assert summary["latency_s"]["p50"] > 0 and summary["cost_usd"] is None
    text = factory_cli("calls", str(run_dir)).stdout
    assert "cache hits: 5" in text and "p99" in text


def test_errors_are_reported_in_the_summary(server, tmp_path):
    from loopback_server import Action

    server.default = Action(status=500)
    config = tmp_path / "fast.yaml"
    config.write_text(
        f"run_dir: {tmp_path / 'run'}\nllm:\n  backoff_base_s: 0.01\n  backoff_max_s: 0.02\n  max_retries: 2\n"
    )
    out = factory_cli("smoke", "-q", "-n", "2", "-c", str(config), "--model", "m", "--base-url", server.base_url)
    assert out.returncode == 1
    assert "errors: server=2" in out.stdout and "HTTP attempts: 6" in out.stdout


def test_ping(server, tmp_path):
    out = factory_cli("ping", "--model", "m", "--base-url", server.base_url, str(tmp_path / "p"))
    assert out.returncode == 0 and out.stdout.startswith("ok in ")


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["smoke", "--model", "openai/gpt-4o-mini"],
            "error: model 'openai/gpt-4o-mini' needs an API key: set OPENAI_API_KEY",
        ),
        (["smoke", "--config", "/nonexistent.yaml"], "error: /nonexistent.yaml: cannot read config"),
        (["calls", "/nonexistent-run"], "error: no run store at /nonexistent-run/factory.sqlite"),
        (
            ["smoke", "-n", "0", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"],
            "error: command line: field 'smoke.n'",
        ),
    ],
)
def test_user_errors_are_one_line(args, message, tmp_path, monkeypatch):
    env_args = [*args, str(tmp_path / "r")] if args[0] != "calls" else args
    result = subprocess.run(
        [sys.executable, "-m", "factory.cli", *env_args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if k != "OPENAI_API_KEY"},
    )
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1


def test_python_api_matches_cli(server, tmp_path):
    import factory

    config = factory.FactoryConfig(run_dir=tmp_path / "api")
    config.llm.model, config.llm.base_url = "m", server.base_url
    config.smoke.n = 3
    outcome = factory.run_smoke(config, progress=False)
    assert all(r.ok for r in outcome.results)
    assert factory.summarize_calls(config.run_dir)["calls"] == 3


def test_later_stage_commands_are_wired_and_errors_stay_one_line(tmp_path, capsys):
    for command in ("passrate", "export", "publish", "report", "status", "eval", "filter"):
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        assert exit_info.value.code == 0
    assert main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert main(["export", str(tmp_path / "no_run"), "--out", str(tmp_path / "out")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all(line.startswith("error: ") for line in errors)


def test_training_commands_without_the_train_extra_say_so_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as on a core install: import torch fails
    assert main(["train", "--config", str(tmp_path / "cfg.yaml")]) == 2
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    from factory.evaluate.players import HFPlayer

    with pytest.raises(FactoryError, match=r"\[train\] extra \(torch is not installed\)"):
        HFPlayer.from_pretrained(checkpoint)
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert error.startswith("error: factory train needs the [train] extra")


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_reader_that_closes_the_pipe_early_gets_no_traceback(extra, server, tmp_path):
    """`factory calls RUN | head`: the reader is gone before the summary is written; the CLI stops quietly."""
    run_dir = tmp_path / "run"
    smoke = factory_cli("smoke", "-q", "-n", "3", "--model", "m", "--base-url", server.base_url, str(run_dir))
    assert smoke.returncode == 0, smoke.stderr
    reader, writer = __import__("os").pipe()
    __import__("os").close(reader)  # the reader closes early: every write to the pipe fails with EPIPE
    with open(writer, "wb") as stdout:
        result = subprocess.run([sys.executable, "-m", "factory.cli", "calls", str(run_dir), *extra],
                                stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60)  # fmt: skip
    assert (result.returncode, result.stderr) == (141, "")  # 128 + SIGPIPE, as `cat | head` ends


def test_a_real_head_reading_one_line_of_a_long_output_more_than_a_pipe_holds(server, tmp_path):
    run_dir = tmp_path / "run"
    args = [
        "smoke",
        "-q",
        "-n",
        "2000",
        "--model",
        "m",
        "--base-url",
        server.base_url,
        str(run_dir),
    ]  # ~220 KB
    pipeline = subprocess.run(
        f"{sys.executable} -m factory.cli {' '.join(args)} | head -n 1", shell=True, capture_output=True, text=True,
        timeout=120)  # fmt: skip
    assert pipeline.returncode == 0 and pipeline.stdout.count("\n") == 1
    assert "Traceback" not in pipeline.stderr and "BrokenPipeError" not in pipeline.stderr, pipeline.stderr


def test_train_help_lists_every_override_the_config_accepts(capsys):
    from train.config import SFTConfig

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for section in ("model", "data", "lora", "optim"):
        for field in SFTConfig.model_fields[section].annotation.model_fields:
            assert f"--{section}.{field} (" in out
    assert "--optim.learning_rate (default 2e-05)" in out and "--output_dir (required)" in out
