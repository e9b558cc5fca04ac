"""Config files fail with one line naming the file, the field and the problem."""

import pytest

from factory.config import load_yaml_config
from factory.errors import ConfigError
from factory.run_config import FactoryConfig, load_factory_config


def write(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, expected",
    [
        ("llm:\n  concurency: 4\n", "field 'llm.concurency': unknown field"),
        ("llm:\n  concurrency: lots\n", "field 'llm.concurrency': Input should be a valid integer"),
        ("llm:\n  concurrency: 0\n", "field 'llm.concurrency': Input should be greater than or equal to 1"),
        ("llm: [1, 2\n", "not valid YAML at line"),
        ("- just\n- a list\n", "expected a mapping at the top level"),
        ("smoke:\n  n: -1\nllm:\n  rpm: -5\n", "(and 1 more problem)"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_field(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_factory_config(path)
    message = str(info.value)
    assert message.startswith(str(path)) and expected in message
    assert "\n" not in message


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_yaml_config(FactoryConfig, tmp_path / "nope.yaml")


def test_good_config_loads_with_defaults(tmp_path):
    path = write(tmp_path, "run_dir: outputs/x\nllm:\n  model: openai/gpt-4o-mini\n  rpm: 500\n")
    config = load_factory_config(path)
    assert config.llm.model == "openai/gpt-4o-mini" and config.llm.rpm == 500
    assert config.llm.concurrency == 16 and config.smoke.n == 4
    assert str(config.run_dir) == "outputs/x"


@pytest.mark.parametrize("content", [b"llm:\n  model: caf\xe9\n", b"\xff\xfeb\x00a\x00d\x00"])
def test_a_config_that_is_not_utf8_is_one_line_from_the_cli(tmp_path, capsys, content):
    from factory.cli import main

    path = tmp_path / "run.yaml"
    path.write_bytes(content)
    assert main(["ping", "-c", str(path), str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: not UTF-8 text (byte 0x") and "save the config as UTF-8" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "run").exists()


def test_a_filter_config_that_is_not_utf8_is_one_line_from_the_cli(tmp_path, capsys):
    from factory.cli import main

    path = tmp_path / "filters.yaml"
    path.write_bytes(b'filters:\n  - name: ok\n    sql: "1 = 1"\n  - name: caf\xe9\n    sql: "1 = 1"\n')
    assert main(["filter", str(tmp_path / "run"), "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {path}: not UTF-8 text (byte 0xe9 at line 4); save the filter config as UTF-8"


def test_yaml_errors_that_span_lines_are_one_line(tmp_path):
    path = write(tmp_path, "llm: \x00\n")
    with pytest.raises(ConfigError, match="not valid YAML: unacceptable character") as info:
        load_factory_config(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "url, problem",
    [
        ("ftp://127.0.0.1/v1", "is not an http(s) URL"),
        ("127.0.0.1:8000/v1", "is not an http(s) URL"),
        ("not a url", "is not one URL"),
        ("http:///v1", "has no valid host and port"),
        ("http://127.0.0.1:99999/v1", "has no valid host and port"),
    ],
)
def test_a_base_url_that_is_not_http_is_refused_before_any_request(tmp_path, capsys, url, problem):
    from factory.cli import main

    assert main(["ping", "--model", "m", "--base-url", url, str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: command line: field 'llm.base_url' (--base-url): ") and problem in err
    assert "e.g. http://127.0.0.1:8000/v1" in err and len(err.splitlines()) == 1
    with pytest.raises(ConfigError, match=f"run.yaml: field 'llm.base_url': '{url}'"):
        load_factory_config(write(tmp_path, f"llm:\n  model: m\n  base_url: '{url}'\n"))


def test_http_and_https_base_urls_are_accepted():
    from factory.llm.config import LLMConfig

    assert LLMConfig(base_url=" https://api.example.com/v1 ").base_url == "https://api.example.com/v1"
    assert LLMConfig(base_url="http://[::1]:8000/v1").base_url == "http://[::1]:8000/v1"


def test_a_pass_rate_filter_naming_a_policy_fails_when_the_filter_file_loads(tmp_path, capsys):
    """Filters only judge: a policy to sample with is refused at load, with where sampling went, in one line."""
    from factory.cli import main

    path = tmp_path / "filters.yaml"
    path.write_text(
        "filters:\n  - name: hard\n    kind: pass_rate\n    model: m\n    tasks: t.jsonl\n"
        "    policy: {model: m, base_url: 'ftp://127.0.0.1/v1'}\n"
    )
    assert main(["filter", str(tmp_path / "run"), "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: filters.0 (hard): 'policy': filters only judge the rollouts already stored")
    assert len(err.splitlines()) == 1


def test_an_http_search_endpoint_needs_a_host():
    from factory.coa.tools import HttpSearchConfig
    from factory.config import validate_config

    with pytest.raises(ConfigError, match="field 'endpoint': 'https:///search' has no valid host"):
        validate_config(HttpSearchConfig, {"endpoint": "https:///search"}, "tools")


def test_the_embedded_model_gets_no_more_requests_at_once_than_its_server_has_slots():
    from factory.llm import LLMConfig

    # past its n_parallel slots a request waits inside llama.cpp with its timeout running, and is sent again
    assert LLMConfig(model="local", concurrency=8).in_flight() == 4
    assert LLMConfig(model="local", concurrency=2, local={"n_parallel": 6}).in_flight() == 2
    assert LLMConfig(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", concurrency=8).in_flight() == 8


@pytest.mark.parametrize(
    "text, said",
    [
        ("run_dir: outputs/a\nllm: {model: local}\nrun_dir: outputs/b\n", "line 3: key 'run_dir' given twice (first at line 1)"),
        ("llm:\n  model: local\n  model: openai/gpt-4o-mini\n", "line 3: key 'model' given twice (first at line 2)"),
        ("refine: {count: 1, count: 2}\n", "line 1: key 'count' given twice (first at line 1)"),
        ("refine: " + "[" * 20_000 + "]" * 20_000 + "\n", "line 1: nested deeper than 64 levels"),
        ("a: " + "x" * (2 << 20) + "\n", "2.0 MiB is not a config (at most 1 MiB)"),
        ('run_dir: "outputs/a\\0b"\n', "field 'run_dir': contains a NUL byte"),
        ('llm: {model: "local\\0"}\n', "field 'llm.model': contains a NUL byte"),
    ],
    ids=["duplicate top key", "duplicate nested key", "duplicate in a flow mapping", "20,000 deep", "2 MiB line",
         "NUL in a path", "NUL in a model name"],
)  # fmt: skip
def test_a_config_yaml_cannot_hide_a_key_nest_without_end_or_grow_without_bound(tmp_path, capsys, text, said):
    """Each is one line from the real command line, before any store is made."""
    from factory.cli import main

    path = tmp_path / "run.yaml"
    path.write_text(text)
    assert main(["ping", str(tmp_path / "run"), "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and said in err and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def test_yaml_merge_keys_still_override_key_by_key(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("_base: &base {model: local, temperature: 0.2}\nllm:\n  <<: *base\n  temperature: 0.7\n")
    from factory.config import read_yaml_mapping

    assert read_yaml_mapping(path)["llm"] == {"model": "local", "temperature": 0.7}
