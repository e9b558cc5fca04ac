"""The web_search backend for a real search API, described entirely by config.

Any JSON API fits: the request is built from templates (`params`, `json_body`,
`headers`, with "{query}", "{k}" and "{api_key}" filled in) and the answer is
read through dotted paths (`results_path`, and the title/url/snippet fields of
each result). 429 and 5xx answers and transport errors are retried with
bounded backoff; anything else that goes wrong raises SearchError with one line.
"""

from __future__ import annotations

import html
import json
import os
import re
from typing import Any

from .config import HttpSearchConfig
from .fetch import TRANSPORT_ERRORS, Fetched, describe_error, fetch, session, sleep_before_retry
from .results import SearchError, SearchResult

TAG = re.compile(r"<[^>]+>")  # APIs often mark the query words in snippets with <b>/<strong>


def fill(template: Any, values: dict[str, Any]) -> Any:
    """`template` with "{name}" replaced by values[name] in every string inside it."""
    if isinstance(template, dict):
        return {key: fill(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values) for value in template]
    if not isinstance(template, str):
        return template
    if template == "{k}":
        return values["k"]  # a JSON body wants the number, not "5"
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def at_path(data: Any, path: str) -> Any:
    """data["a"]["b"][0] for "a.b.0"; KeyError when a step is missing."""
    for step in filter(None, path.split(".")):
        if isinstance(data, list) and step.lstrip("-").isdigit() and -len(data) <= int(step) < len(data):
            data = data[int(step)]
        elif isinstance(data, dict) and step in data:
            data = data[step]
        else:
            raise KeyError(step)
    return data


def lookup(item: dict[str, Any], path: str | None) -> str | None:
    """The cleaned text at `path` of one result; None when there is no such field."""
    if path is None:
        return None
    try:
        return clean(at_path(item, path))
    except KeyError:
        return None


def clean(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return " ".join(html.unescape(TAG.sub("", text)).split())


class HttpSearchBackend:
    def __init__(self, config: HttpSearchConfig):
        self.config = config

    def api_key(self) -> str:
        name = self.config.api_key_env
        if name is None:
            return ""
        key = os.environ.get(name, "")
        if not key:
            raise SearchError(f"the search API key is missing: set the environment variable {name}")
        return key

    def request(self, query: str, k: int) -> dict[str, Any]:
        """aiohttp keyword arguments for one search."""
        key = self.api_key()
        values = {"query": query, "k": k, "api_key": key}
        headers = {name: str(fill(value, values)) for name, value in self.config.headers.items()}
        if key and self.config.api_key_header:
            headers[self.config.api_key_header] = self.config.api_key_template.replace("{api_key}", key)
        params = {name: str(value) for name, value in fill(self.config.params, values).items()}
        request: dict[str, Any] = {"headers": headers, "params": params}
        if self.config.json_body is not None:
            request["json"] = fill(self.config.json_body, values)
        return request

    async def search(self, query: str, k: int) -> list[SearchResult]:
        request = self.request(query, k)
        answer = await self.fetch_with_retries(request)
        return self.parse(answer.body, k)

    async def fetch_with_retries(self, request: dict[str, Any]) -> Fetched:
        config = self.config
        problem, retry_after = "", None
        async with session(config.timeout_s, public_only=False) as client:
            for attempt in range(config.max_retries + 1):
                if attempt:
                    await sleep_before_retry(attempt - 1, config.backoff_s, config.backoff_max_s, retry_after)
                try:
                    answer = await fetch(client, config.method, config.endpoint, config.max_response_bytes, **request)
                except TRANSPORT_ERRORS as exc:
                    problem, retry_after = describe_error(exc, config.timeout_s), None
                    continue
                if answer.status == 429 or answer.status >= 500:
                    problem, retry_after = f"HTTP {answer.status} {answer.reason}".strip(), answer.retry_after
                    continue
                return self.checked(answer)
        attempts = config.max_retries + 1
        raise SearchError(f"{problem} ({attempts} attempt{'s' * (attempts > 1)})")

    def checked(self, answer: Fetched) -> Fetched:
        if answer.status >= 300:  # 4xx other than 429: retrying will not help (bad key, bad request)
            detail = clean(answer.body[:200].decode("utf-8", "replace"))
            raise SearchError(f"search API answered HTTP {answer.status} {answer.reason}: {detail}".rstrip(": "))
        if answer.truncated:
            raise SearchError(f"search API response is larger than {self.config.max_response_bytes} bytes")
        return answer

    def parse(self, body: bytes, k: int) -> list[SearchResult]:
        config = self.config
        try:
            data = json.loads(body)
        except ValueError as exc:  # UnicodeDecodeError included
            raise SearchError(f"search API response is not JSON ({exc.__class__.__name__}: {exc})") from None
        try:
            items = at_path(data, config.results_path)
        except KeyError as exc:
            raise SearchError(f"search API response has no '{config.results_path}' (missing '{exc.args[0]}')") from None
        if not isinstance(items, list):
            raise SearchError(f"search API response: '{config.results_path}' is not a list")
        return [self.result(item) for item in items if isinstance(item, dict)][:k]

    def result(self, item: dict[str, Any]) -> SearchResult:
        config = self.config
        title, url, snippet = (
            lookup(item, path) or "" for path in (config.title_field, config.url_field, config.snippet_field)
        )
        return SearchResult(
            title, url or None, snippet, lookup(item, config.date_field), lookup(item, config.source_field)
        )
