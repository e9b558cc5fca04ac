"""Error objects in replies (OpenAI, vLLM, llama.cpp, LiteLLM proxy shapes), over real loopback HTTP:
each names its kind, and only what a retry can mend is retried."""

import asyncio
import json

import pytest
from loopback_server import Action, ok, provider_error
from pydantic import BaseModel

from factory.cli import main
from factory.llm import LLMClient, Request
from factory.llm.transport import classify_reply


class Answer(BaseModel):
    name: str


def ask(marker: str) -> Request:
    return Request([{"role": "user", "content": f"answer {marker}"}], Answer, stage="t")


def one(config, marker: str):
    async def go():
        async with LLMClient(config, None) as llm:
            [result] = await llm.complete_many([ask(marker)], progress=False)
            return result

    return asyncio.run(go())


def sent(server, marker: str) -> int:
    return sum(marker in json.dumps(r["body"]) for r in server.requests)


# What OpenAI sends (platform docs: error codes), under 200 from a proxy that wraps it.
OPENAI_AUTH = dict(message="Incorrect API key provided: sk-abc.", type="invalid_request_error", code="invalid_api_key")
OPENAI_CONTEXT = dict(
    message="This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens.",
    type="invalid_request_error",
    code="context_length_exceeded",
)
OPENAI_RATE = dict(
    message="Rate limit reached for gpt-4o-mini on requests per min (RPM).", type="requests", code="rate_limit_exceeded"
)
OPENAI_SERVER = dict(message="The server had an error while processing your request.", type="server_error")


@pytest.mark.parametrize(
    "error, kind, attempts",
    [
        (OPENAI_AUTH, "auth", 1),
        (OPENAI_CONTEXT, "context_length", 1),
        (dict(message="something odd happened", type="mystery_error"), "bad_response", 4),  # 1 + max_retries
    ],
)
def test_a_200_error_object_is_classified_and_retried_only_when_retryable(server, fast_config, error, kind, attempts):
    server.route("m200", *[provider_error(**error) for _ in range(6)])
    result = one(fast_config(), "m200")
    assert not result.ok and result.error_kind == kind
    assert result.attempts == attempts and sent(server, "m200") == attempts
    assert error["message"][:20] in result.error and "\n" not in result.error


def test_a_200_rate_limit_honours_retry_after_then_succeeds(server, fast_config):
    server.route("rate", provider_error(**OPENAI_RATE, headers={"Retry-After": "0.4"}), ok({"name": "x"}))
    result = one(fast_config(), "rate")
    assert result.ok and result.attempts == 2
    first, second = server.requests[0]["time"], server.requests[1]["time"]
    assert second - first >= 0.38  # the cool-down it asked for, not the 10 ms backoff


def test_a_200_server_error_is_retried(server, fast_config):
    server.route("srv", provider_error(**OPENAI_SERVER), provider_error(**OPENAI_SERVER), ok({"name": "x"}))
    result = one(fast_config(), "srv")
    assert result.ok and result.attempts == 3


@pytest.mark.parametrize(
    "reply, kind, attempts",
    [
        # OpenAI: a spent account is a 429 too, but no retry mends it
        (provider_error("You exceeded your current quota, please check your plan and billing details.",
                        "insufficient_quota", "insufficient_quota", status=429), "quota", 1),
        (provider_error(**OPENAI_AUTH, status=401), "auth", 1),
        # vLLM: the exception's name as type, the status as code; the nested shape and the older flat one
        (provider_error("This model's maximum context length is 2048 tokens. However, you requested 3000 tokens "
                        "(2000 in the messages, 1000 in the completion).", "BadRequestError", 400, status=400),
         "context_length", 1),
        (provider_error("This model's maximum context length is 2048 tokens.", "BadRequestError", 400,
                        status=400, nested=False), "context_length", 1),
        (provider_error("The model `x` does not exist.", "NotFoundError", 404, status=404), "not_found", 1),
        # llama.cpp's server (the embedded model)
        (provider_error("the request exceeds the available context size, try increasing it",
                        "exceed_context_size_error", 400, status=400), "context_length", 1),
        # LiteLLM's proxy: the status as a string code
        (provider_error("Authentication Error, Invalid proxy server token passed.", "auth_error", "401", status=401),
         "auth", 1),
        (provider_error("Loading model", "unavailable_error", 503, status=503), "server", 4),
    ],
)  # fmt: skip
def test_error_statuses_take_the_kind_their_object_names(server, fast_config, reply, kind, attempts):
    server.route("st", *[reply for _ in range(6)])
    result = one(fast_config(), "st")
    assert not result.ok and result.error_kind == kind and result.attempts == attempts


def test_a_200_error_with_a_status_code_takes_that_status(server, fast_config):
    # OpenRouter: {"error": {"code": 429, "message": ...}} with HTTP 200 when a provider fails mid-request
    server.route("orr", provider_error("Provider returned error", code=429), ok({"name": "x"}))
    result = one(fast_config(), "orr")
    assert result.ok and result.attempts == 2


def test_plain_statuses_keep_their_kinds():
    assert classify_reply(500, b"oops", {}).kind == "server"
    assert classify_reply(429, b"<html>slow down</html>", {"retry-after": "2"}).retry_after == 2
    assert classify_reply(400, b'{"detail": "bad"}', {}).kind == "bad_request"
    assert classify_reply(402, b'{"error": {"message": "Insufficient credits", "code": 402}}', {}).kind == "quota"


def test_ping_reports_an_auth_error_in_one_line_after_one_attempt(server, tmp_path, capsys):
    server.default = provider_error(**OPENAI_AUTH)
    code = main(["ping", "--model", "loopback", "--base-url", server.base_url, str(tmp_path / "run")])
    out = capsys.readouterr().out.strip()
    assert code == 1 and out.startswith("ping failed (auth) after 1 attempt(s): check the API key")
    assert len(out.splitlines()) == 1 and len(server.requests) == 1


def test_ping_with_a_server_that_is_fine_still_works(server, tmp_path, capsys):
    server.default = Action()
    assert main(["ping", "--model", "loopback", "--base-url", server.base_url, str(tmp_path)]) == 0


@pytest.mark.parametrize(
    "reply, kind",
    [
        (provider_error("You exceeded your current quota", "insufficient_quota", "insufficient_quota", status=429),
         "quota"),
        (provider_error("This model's maximum context length is 2048 tokens.", "BadRequestError", 400, status=400),
         "context_length"),
        (provider_error(**OPENAI_AUTH, status=401), "auth"),
        (provider_error(**OPENAI_AUTH), "auth"),  # under 200: litellm raises APIError with the code as its status
    ],
)  # fmt: skip
def test_the_litellm_transport_names_the_same_kinds(server, fast_config, reply, kind):
    server.route("lit", *[reply for _ in range(6)])
    result = one(fast_config(transport="litellm"), "lit")
    assert not result.ok and result.error_kind == kind and result.attempts == 1
