"""Model strings resolve to endpoints; missing keys are one-line errors naming the variable."""

import asyncio

import pytest
from test_llm_faults import ask

from factory.errors import FactoryError, MissingKeyError
from factory.llm import LLMClient, LLMConfig, resolve_endpoint

KEYS = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY", "HOSTED_VLLM_API_BASE", "MY_KEY"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize(
    "model, variable",
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("deepseek/deepseek-chat", "DEEPSEEK_API_KEY"),
        ("anthropic/claude-3-5-sonnet-20240620", "ANTHROPIC_API_KEY"),
        ("hosted_vllm/qwen", "HOSTED_VLLM_API_BASE"),
    ],
)
def test_missing_key_names_the_variable(model, variable):
    with pytest.raises(MissingKeyError) as info:
        resolve_endpoint(LLMConfig(model=model))
    assert variable in str(info.value) and model in str(info.value) and "\n" not in str(info.value)


def test_base_url_key_variable_must_be_set():
    with pytest.raises(MissingKeyError, match="MY_KEY"):
        resolve_endpoint(LLMConfig(model="m", base_url="http://127.0.0.1:1/v1", api_key_env="MY_KEY"))


def test_routes(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", "http://10.0.0.5:8000/v1")
    openai = resolve_endpoint(LLMConfig(model="openai/gpt-4o-mini"))
    assert (openai.transport, openai.model, openai.api_key) == ("openai", "gpt-4o-mini", "sk-test")
    vllm = resolve_endpoint(LLMConfig(model="hosted_vllm/Qwen/Qwen2.5-7B"))
    assert (vllm.base_url, vllm.model) == ("http://10.0.0.5:8000/v1", "Qwen/Qwen2.5-7B")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "k")
    deepseek = resolve_endpoint(LLMConfig(model="deepseek/deepseek-chat"))
    assert deepseek.transport == "openai" and not deepseek.json_schema  # JSON mode + schema in prompt
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    claude = resolve_endpoint(LLMConfig(model="anthropic/claude-3-5-sonnet-20240620"))
    assert claude.transport == "litellm" and claude.provider == "anthropic"
    assert resolve_endpoint(LLMConfig(model="ollama/llama3")).base_url == "http://localhost:11434/v1"
    local = resolve_endpoint(LLMConfig(), local_base_url="http://127.0.0.1:5/v1")
    assert (local.provider, local.base_url) == ("local", "http://127.0.0.1:5/v1")


def test_unknown_bare_model_name_is_a_clear_error():
    with pytest.raises(FactoryError, match="unknown model 'gpt-nonsense-9'"):
        resolve_endpoint(LLMConfig(model="gpt-nonsense-9"))


def test_missing_local_gguf_is_a_clear_error(tmp_path):
    async def go():
        async with LLMClient(LLMConfig(model=f"local:{tmp_path}/none.gguf")):
            pass

    with pytest.raises(FactoryError, match="local model file not found"):
        asyncio.run(go())


def test_litellm_transport_over_real_http(server, fast_config):
    """The litellm path (for providers needing translation) hits the same loopback server."""
    config = fast_config(model="openai/loopback", transport="litellm")

    async def go():
        async with LLMClient(config) as llm:
            return await llm.run(ask("via-litellm"))

    result = asyncio.run(go())
    assert result.ok and result.parsed.name == "track_parcel"
    assert server.requests[0]["body"]["model"] == "loopback"


def test_litellm_transport_classifies_http_errors(server, fast_config):
    from loopback_server import Action

    server.route("lit500", Action(status=500), Action(status=500))
    config = fast_config(model="openai/loopback", transport="litellm", max_retries=1)

    async def go():
        async with LLMClient(config) as llm:
            return await llm.run(ask("lit500"))

    result = asyncio.run(go())
    assert not result.ok and result.error_kind == "server" and result.attempts == 2
