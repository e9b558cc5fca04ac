"""The web agent's tools as AFM's agent sees them: crawl_page's goal-directed summaries (through a real
LLM client against the loopback server), one observation cut in the toolbox, and bounded wire schemas."""

import asyncio
import json

from loopback_server import ok
from test_wire_schemas_bounded import unbounded_strings

from factory.coa.tools import (
    CrawlPageTool,
    CrawlToolConfig,
    Goal,
    LocalCorpusConfig,
    LocalSearchBackend,
    PageSummarizer,
    ToolBox,
    ToolResult,
    ToolsConfig,
)  # fmt: skip
from factory.coa.tools.summary import summary_model
from factory.llm import LLMClient
from factory.llm.structured import output_spec

SUMMARY = "Summarise a web page for a reader"  # the first words of prompts/coa/crawl_summary.md
CORPUS = [
    {"id": "venom", "title": "Platypus venom", "text": "Only the male platypus has a venomous spur on its hind leg."},
    {"id": "seine", "title": "Paris", "text": "Paris, the capital of France, lies on the river Seine."},
]
GOAL = Goal(question="Which platypus has venom?", query="platypus venom", clues="I need to know which sex is venomous.")


def corpus(tmp_path) -> LocalSearchBackend:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in CORPUS))
    return LocalSearchBackend(LocalCorpusConfig(path=path, index_dir=tmp_path / "index"))


def crawl(config, tmp_path, argument: str, goal: Goal | None = GOAL, **settings) -> ToolResult:
    async def go():
        async with LLMClient(config) as llm:
            tool = CrawlPageTool(CrawlToolConfig(**settings), corpus(tmp_path), PageSummarizer(llm, 300))
            return await tool(argument, goal=goal)

    return asyncio.run(go())


def sent_prompts(server) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in server.requests]


def test_crawl_page_summarises_the_page_toward_the_goal(server, fast_config, tmp_path):
    server.route(SUMMARY, ok({"summary": "- Only the male platypus is venomous (spur on the hind leg)."}))
    result = crawl(fast_config(), tmp_path, "corpus://venom")

    assert result.ok and result.text == (  # AFM's crawl_page observation for one page
        "Page 1 [corpus://venom] Summary:\n- Only the male platypus is venomous (spur on the hind leg)."
    )
    (prompt,) = sent_prompts(server)
    for part in (GOAL.question, GOAL.query, GOAL.clues, "Only the male platypus has a venomous spur"):
        assert part in prompt  # the goal steers it, and the page is what it reads
    ((model, call),) = result.llm
    assert model == "loopback" and call.ok and call.prompt_tokens == 10  # the trace can count the call
    assert result.meta["summarised"] == [True] and result.meta["pages"][0]["source"] == "corpus"


def test_several_pages_and_an_unreadable_one_as_afm_lays_them_out(server, fast_config, tmp_path):
    server.route(SUMMARY, ok({"summary": "- Paris lies on the Seine."}))
    result = crawl(fast_config(), tmp_path, "[Paris](corpus://seine) | corpus://nope")

    assert result.ok and result.text == (
        "Page 1 [corpus://seine] Summary:\n- Paris lies on the Seine.\n\n"
        "Page 2 [corpus://nope]: [Page content not accessible: Error: no document corpus://nope in the local corpus]"
    )
    assert len(server.requests) == 1  # nothing to summarise on a page that could not be read
    assert result.meta["summarised"] == [True, False]


def test_a_failed_summary_is_an_observation_not_a_crash(server, fast_config, tmp_path):
    server.route(SUMMARY, *[ok("this is not json")] * 5)
    result = crawl(fast_config(max_parse_retries=0), tmp_path, "corpus://venom")

    assert not result.ok
    assert result.text.startswith("Page 1 [corpus://venom] Summary:\n[Error: the summary failed: schema: ")
    assert result.meta["summarised"] == [False] and not result.llm[0][1].ok


def test_without_a_goal_the_prompt_says_so_and_the_page_is_still_summarised(server, fast_config, tmp_path):
    server.route(SUMMARY, ok({"summary": "No relevant information"}))
    result = crawl(fast_config(), tmp_path, "corpus://seine", goal=None)
    assert result.ok and result.text.endswith("Summary:\nNo relevant information")
    assert "Last web search query: (none yet)" in sent_prompts(server)[0]


def test_the_summary_reply_bounds_its_string():
    schema = output_spec(summary_model(500)).schema
    assert unbounded_strings(schema) == [] and schema["properties"]["summary"]["maxLength"] == 500


# --- the toolbox: one cut, and the goal only where a tool takes one ---------------------------


class Echo:
    """A tool that answers with a long text, and says whether it was given a goal."""

    name = "echo"

    def __init__(self, takes_goal: bool):
        self.takes_goal = takes_goal
        self.goals = []

    async def __call__(self, argument, goal=None):
        self.goals.append(goal)
        return ToolResult(True, argument * 1000, {"status": "ok"})


def test_the_toolbox_cuts_an_observation_once_and_says_where():
    toolbox = ToolBox({"echo": Echo(takes_goal=False)}, observation_chars=250)
    result = asyncio.run(toolbox.call("echo", "ab", GOAL))
    assert result.text == "ab" * 125 + "\n[... truncated: 1750 more characters]"
    assert result.meta == {"status": "ok", "cut_from_chars": 2000}
    assert toolbox["echo"].goals == [None]  # a tool that takes no goal is called with the argument alone

    toolbox = ToolBox({"echo": Echo(takes_goal=True)})
    short = asyncio.run(toolbox.call("echo", "x", GOAL))
    assert short.text == "x" * 1000 and "cut_from_chars" not in short.meta and toolbox["echo"].goals == [GOAL]


def test_the_toolbox_passes_the_goal_to_crawl_page_and_summarises_with_the_given_client(server, fast_config, tmp_path):
    server.route(SUMMARY, ok({"summary": "- The male has the spur."}))
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in CORPUS))
    config = ToolsConfig.model_validate({"web_search": {"enabled": True, "local": {"path": str(path)}}})

    async def go():
        async with LLMClient(fast_config()) as llm:
            toolbox = ToolBox.from_config(config, llm)
            try:
                return await toolbox.call("crawl_page", "corpus://venom", GOAL)
            finally:
                toolbox.close()

    result = asyncio.run(go())
    assert result.text == "Page 1 [corpus://venom] Summary:\n- The male has the spur."
    assert GOAL.clues in sent_prompts(server)[0]

    raw = ToolBox.from_config(config.model_copy(update={"crawl_page": CrawlToolConfig(summarize=False)}))
    page = asyncio.run(raw.call("crawl_page", "corpus://venom", GOAL))
    assert page.text.startswith("Title: Platypus venom\nURL: corpus://venom\n\nOnly the male")  # no LLM: the text
    raw.close()
