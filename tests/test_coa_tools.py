"""The Chain-of-Agents tools over HTTP: web_search (HTTP API), crawl_page, the toolbox (code and the local
corpus: test_coa_code_and_corpus.py).

No network beyond 127.0.0.1: HTTP behaviour is tested against a small aiohttp
server in a background thread, scripted per test.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from aiohttp import web
from pydantic import ValidationError
from test_coa_code_and_corpus import write_corpus

from factory.coa.tools import (
    CrawlPageTool,
    CrawlToolConfig,
    HttpSearchBackend,
    HttpSearchConfig,
    LocalCorpusConfig,
    LocalSearchBackend,
    SearchToolConfig,
    ToolBox,
    ToolResult,
    ToolsConfig,
    WebSearchTool,
)  # fmt: skip


def run(coroutine):
    return asyncio.run(coroutine)


# --- a scripted loopback HTTP server ---------------------------------------------------------


class Server:
    """Routes answer from a queue of scripted replies (then the default); requests are recorded."""

    def __init__(self):
        self.script: dict[str, list[web.Response | float]] = {}  # a float: hang for that many seconds
        self.requests: list[web.Request] = []
        self.bodies: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        self.stopping = asyncio.Event()
        self.base = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        self.bodies.append(await request.read())
        queue = self.script.get(request.path, [])
        reply = queue.pop(0) if queue else web.Response(status=404, text="not found")
        if isinstance(reply, float):  # a hang, cut short when the server stops
            try:
                await asyncio.wait_for(self.stopping.wait(), reply)
            except asyncio.TimeoutError:
                pass
            return web.Response(text="too late")
        return reply

    def start(self) -> str:
        ready = threading.Event()

        async def serve():
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self.runner = web.AppRunner(app, access_log=None)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
            ready.set()

        threading.Thread(
            target=lambda: (self.loop.run_until_complete(serve()), self.loop.run_forever()), daemon=True
        ).start()
        assert ready.wait(10)
        return self.base

    def stop(self):
        self.loop.call_soon_threadsafe(self.stopping.set)
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def server():
    srv = Server()
    srv.start()
    yield srv
    srv.stop()


# --- web_search: HTTP API --------------------------------------------------------------------


def api_config(server, **overrides) -> HttpSearchConfig:
    values = dict(endpoint=f"{server.base}/search", params={"q": "{query}", "n": "{k}"}, results_path="data.items",
                  title_field="name", url_field="link", snippet_field="desc", timeout_s=2, backoff_s=0.01,
                  api_key_env="TEST_SEARCH_KEY", api_key_header="X-Key", api_key_template="{api_key}")  # fmt: skip
    values.update(overrides)
    return HttpSearchConfig(**values)


def api_search(config: HttpSearchConfig, query="platypus venom") -> ToolResult:
    search = SearchToolConfig(enabled=True, backend="http", http=config, top_k=2)
    return run(WebSearchTool(search, HttpSearchBackend(config))(query))


ITEMS = {"data": {"items": [{"name": "Platypus", "link": "https://e.org/p", "desc": "A <b>venomous</b> mammal"},
                            {"name": "Spur", "link": "https://e.org/s", "desc": "x"}, {"name": "Third"}]}}  # fmt: skip


def test_http_search_maps_the_response_and_sends_the_key(server, monkeypatch):
    monkeypatch.setenv("TEST_SEARCH_KEY", "sekret")
    server.script["/search"] = [web.json_response(ITEMS)]
    result = api_search(api_config(server))
    assert result.ok
    assert result.text.splitlines()[3:6] == ["1. [Platypus](https://e.org/p)", "https://e.org/p", "A venomous mammal"]
    assert "Third" not in result.text  # top_k=2
    request = server.requests[0]
    assert request.headers["X-Key"] == "sekret" and dict(request.query) == {"q": "platypus venom", "n": "2"}


SERPER = {"organic": [
    {"title": "Platypus - Wikipedia", "link": "https://en.wikipedia.org/wiki/Platypus", "date": "Mar 3, 2024",
     "snippet": "The platypus is a semiaquatic, egg-laying mammal. Your browser can't play this video."},
    {"link": "https://e.org/no-title", "source": "e.org", "snippet": ""},
    {"title": "No link"},
]}  # fmt: skip


def test_http_search_lays_out_a_serper_answer_as_afm_does(server):
    serper = dict(results_path="organic", title_field="title", url_field="link", snippet_field="snippet",
                  date_field="date", source_field="source", api_key_env=None)  # fmt: skip
    server.script["/search"] = [web.json_response(SERPER)]
    search = SearchToolConfig(enabled=True, backend="http", http=api_config(server, **serper), top_k=5)
    result = run(WebSearchTool(search, HttpSearchBackend(search.http))("platypus"))
    # What AFM's _format_results_to_string returns for the same Serper JSON, byte for byte.
    assert result.text == (
        "Found 3 results:\n\n## Web Results\n"
        "1. [Platypus - Wikipedia](https://en.wikipedia.org/wiki/Platypus)\nDate published: Mar 3, 2024\n"
        "https://en.wikipedia.org/wiki/Platypus\nThe platypus is a semiaquatic, egg-laying mammal.\n\n"
        "2. [No Title](https://e.org/no-title)\nSource: e.org\nhttps://e.org/no-title\n\n"
        "3. [No link](#)\n#"
    )


def test_http_search_posts_a_json_body(server, monkeypatch):
    monkeypatch.setenv("TEST_SEARCH_KEY", "sekret")
    server.script["/search"] = [web.json_response(ITEMS)]
    assert api_search(api_config(server, method="POST", params={}, json_body={"query": "{query}", "num": "{k}"})).ok
    assert json.loads(server.bodies[0]) == {"query": "platypus venom", "num": 2}


def test_http_search_retries_a_500_and_a_429(server, monkeypatch):
    monkeypatch.setenv("TEST_SEARCH_KEY", "k")
    server.script["/search"] = [
        web.Response(status=500),
        web.Response(status=429, headers={"Retry-After": "0"}),
        web.json_response(ITEMS),
    ]
    assert api_search(api_config(server)).ok and len(server.requests) == 3


def test_http_search_gives_up_after_bounded_retries(server, monkeypatch):
    monkeypatch.setenv("TEST_SEARCH_KEY", "k")
    server.script["/search"] = [web.Response(status=503) for _ in range(5)]
    result = api_search(api_config(server, max_retries=1))
    assert not result.ok and result.text == "Search failed: HTTP 503 Service Unavailable (2 attempts)"
    assert len(server.requests) == 2


def test_http_search_times_out_on_a_hang(server, monkeypatch):
    monkeypatch.setenv("TEST_SEARCH_KEY", "k")
    server.script["/search"] = [5.0]
    result = api_search(api_config(server, timeout_s=0.3, max_retries=0))
    assert not result.ok and "timed out after 0.3 s" in result.text


@pytest.mark.parametrize(
    "reply, message",
    [
        (web.Response(text="<html>not json</html>"), "response is not JSON"),
        (web.json_response({"data": {}}), "has no 'data.items' (missing 'items')"),
        (web.Response(status=401, text="bad key"), "HTTP 401 Unauthorized: bad key"),
        (web.Response(text="x" * 5000), "larger than 1024 bytes"),
    ],
)
def test_http_search_turns_bad_answers_into_observations(server, monkeypatch, reply, message):
    monkeypatch.setenv("TEST_SEARCH_KEY", "k")
    server.script["/search"] = [reply]
    result = api_search(api_config(server, max_response_bytes=1024))
    assert not result.ok and message in result.text and len(server.requests) == 1


def test_http_search_without_its_key_says_which_variable(server, monkeypatch):
    monkeypatch.delenv("TEST_SEARCH_KEY", raising=False)
    result = api_search(api_config(server))
    assert not result.ok and "set the environment variable TEST_SEARCH_KEY" in result.text and not server.requests


# --- crawl_page ------------------------------------------------------------------------------

PAGE = """<html><head><title>The Platypus</title><style>body {color: red}</style></head>
<body><script>var secret = 1;</script><h1>Platypus</h1><p>A  semi-aquatic
mammal &amp; monotreme.</p><ul><li>venomous spur</li><li>lays eggs</li></ul></body></html>"""


def crawl(argument: str, **config) -> ToolResult:
    return run(CrawlPageTool(CrawlToolConfig(**{"allow_private_addresses": True, **config}))(argument))


def test_crawl_page_turns_html_into_text(server):
    server.script["/page"] = [web.Response(text=PAGE, content_type="text/html")]
    result = crawl(f"{server.base}/page")
    assert result.ok
    text = "Platypus\n\nA semi-aquatic mammal & monotreme.\n\n- venomous spur\n- lays eggs"
    assert result.text == f"Title: The Platypus\nURL: {server.base}/page\n\n{text}"


def test_crawl_page_caps_a_huge_page(server):
    server.script["/huge"] = [web.Response(text="<p>" + "word " * 1_000_000 + "</p>", content_type="text/html")]
    result = crawl(f"{server.base}/huge", max_bytes=100_000, max_chars=2000)
    assert result.ok and result.meta["bytes"] == 100_000 and result.meta["truncated"]
    assert len(result.text) < 2300 and "[... truncated" in result.text and "[page cut at 100000 bytes]" in result.text


def test_crawl_page_refuses_other_schemes_and_private_hosts(server):
    for url in ("file:///etc/passwd", "ftp://example.org/x", "javascript:alert(1)"):
        result = crawl(url)
        assert not result.ok and result.text.startswith("Refused: crawl_page fetches only http:// and https://")
    server.script["/page"] = [web.Response(text=PAGE, content_type="text/html")]
    result = crawl(f"{server.base}/page", allow_private_addresses=False)  # the default
    assert not result.ok and "127.0.0.1 is a private or local address" in result.text and not server.requests


def test_crawl_page_follows_redirects_but_checks_each_hop(server):
    server.script["/old"] = [web.Response(status=302, headers={"Location": "/page"})]
    server.script["/page"] = [web.Response(text=PAGE, content_type="text/html")]
    assert crawl(f"{server.base}/old").text.startswith("Title: The Platypus")
    server.script["/sneaky"] = [web.Response(status=302, headers={"Location": "file:///etc/passwd"})]
    assert crawl(f"{server.base}/sneaky").text.startswith("Refused:")


def test_crawl_page_failures_are_observations(server):
    server.script["/slow"] = [5.0]
    slow = crawl(f"{server.base}/slow", timeout_s=0.3)
    assert slow.text == f"Error fetching {server.base}/slow: timed out after 0.3 s"
    assert crawl(f"{server.base}/missing").text == f"Error fetching {server.base}/missing: HTTP 404 Not Found"
    server.script["/bin"] = [web.Response(body=b"\x00\x01", content_type="application/octet-stream")]
    assert crawl(f"{server.base}/bin").text == "Refused: the page is application/octet-stream, not text or HTML"


def test_crawl_page_reads_the_local_corpus_without_network(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    corpus = LocalSearchBackend(LocalCorpusConfig(path=tmp_path / "corpus.jsonl"))
    tool = CrawlPageTool(CrawlToolConfig(), corpus)
    result = run(tool("corpus://venom-2"))
    assert result.ok and result.text.startswith("Title: Monotremes\nURL: corpus://venom-2\n\nAmong monotremes")
    assert run(tool("http://docs.invalid/f3")).meta["source"] == "corpus"  # a known URL: no fetch
    assert run(tool("corpus://nope")).text == "Error: no document corpus://nope in the local corpus"


# --- ToolBox and config ------------------------------------------------------------------------


def test_toolbox_from_config_and_its_failures(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    local = {"path": str(tmp_path / "corpus.jsonl")}
    config = ToolsConfig.model_validate({"web_search": {"enabled": True, "local": local}})
    toolbox = ToolBox.from_config(config)
    assert sorted(toolbox) == ["code", "crawl_page", "web_search"]
    assert run(toolbox.call("web_search", '{"query": ["platypus venom", "zyzzyva"]}')).meta["n_results"] == [3, 0]
    unknown = run(toolbox.call("browse", "x"))
    assert unknown.text == "Error: there is no tool 'browse' (available: code, crawl_page, web_search)"

    class Broken:
        name = "broken"

        async def __call__(self, argument):
            raise RuntimeError("bug")

    assert run(ToolBox({"broken": Broken()}).call("broken", "")).text == "Error: broken failed: RuntimeError: bug"
    toolbox.close()


def test_tools_config_is_strict():
    assert sorted(ToolBox.from_config()) == ["code", "crawl_page"]  # web_search needs a corpus or an API
    with pytest.raises(ValidationError, match="backend 'local' is chosen but its section 'local' is missing"):
        ToolsConfig.model_validate({"web_search": {"enabled": True}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        ToolsConfig.model_validate({"code": {"timeout": 3}})
    with pytest.raises(ValidationError):
        HttpSearchConfig(endpoint="ftp://x")
