"""Config files fail with one line naming the file, the field and the problem."""

import pytest

from factory.config import load_yaml_config
from factory.errors import ConfigError
from factory.settings import FactoryConfig, load_factory_config


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
