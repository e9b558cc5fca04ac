"""The Chain-of-Agents code tool (sandbox) and local BM25 web_search: no network at all."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factory.coa.tools import (
    CodeTool,
    CodeToolConfig,
    CorpusIndex,
    LocalCorpusConfig,
    LocalSearchBackend,
    SearchToolConfig,
    ToolResult,
    WebSearchTool,
    index_path,
)  # fmt: skip
from factory.coa.tools.search import best_snippet


def run(coroutine):
    return asyncio.run(coroutine)


# --- code ----------------------------------------------------------------------------------


def code(source: str, **config) -> ToolResult:
    return run(CodeTool(CodeToolConfig(**config))(source))


def test_code_prints_real_math():
    source = "from fractions import Fraction\nimport math\nprint(math.comb(10, 3), Fraction(1, 3) + Fraction(1, 6))"
    result = code(source)
    assert result.ok and result.text == "[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n120 1/2\n[STDOUT:END]"


def test_code_echoes_a_final_expression_like_a_notebook():
    echoed = code("xs = [1,\n      2, 3]\nsum(xs) * 2").text
    assert echoed == "[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n12\n[STDOUT:END]"
    assert code("print('shown')\nNone").text.count("shown") == 1  # None is not echoed
    assert code("x = 2").text == "[EXECUTED] Code exited with status 0 (no output)."
    assert code("x = 2", echo_last_expression=False).ok
    assert code("2 + 2", echo_last_expression=False).text.endswith("(no output).")


def test_code_reports_an_exception_with_its_traceback_and_what_was_printed():
    result = code("print('before')\nx = 1\ny = 0\nx / y")
    assert not result.ok and result.meta["exit_status"] == 1
    assert result.text.startswith(
        "[FAILED] Code exited with status 1 with mixed output:\n[STDOUT:BEGIN]\nbefore\n[STDOUT:END]\n"
        '[STDERR:BEGIN]\nTraceback (most recent call last):\n  File "<sandbox>", line 4, in <module>\n'
    )
    assert result.text.endswith("\nZeroDivisionError: division by zero\n[STDERR:END]")


def test_code_times_out_on_an_infinite_loop():
    """Whichever limit fires first (the CPU second; on a busy machine the wall clock's 1.5 s can come before it),
    the run is a timeout told in AFM's words, with the status AFM's executor gives that limit: 152 (SIGXCPU) or 1
    (its subprocess timeout). test_code_tool_observations.py pins each path on its own."""
    result = code("while True:\n    pass", wall_s=1.5, cpu_s=1)
    assert not result.ok and result.meta["status"] == "timeout"
    status = {"cpu": 152, "wall": 1}[result.meta["reason"]]
    assert result.text == (
        f"[FAILED] Code exited with status {status}.\n[STDERR:BEGIN]\nTime out. Check for infinite "
        "loops, blocked I/O (e.g., input()), or deadlocks.\n[STDERR:END]"
    )


def test_code_rejects_hostile_code_before_running_it():
    result = code("import os\nos.system('touch /tmp/pwned')")
    assert not result.ok and result.text.startswith(
        "[FAILED] Code exited with status 1.\n[STDERR:BEGIN]\nRejected: line 1: import of 'os' is not allowed"
    )
    assert "Rejected:" in code("open('/etc/passwd').read()").text
    assert "Rejected:" in code("().__class__.__bases__").text


def test_code_caps_long_output_and_unwraps_markdown_fences():
    result = code("```python\nfor i in range(3000):\n    print(i)\n```", max_output_chars=500)
    assert result.ok and len(result.text) <= 500
    assert result.text.startswith("[EXECUTED] Code exited with status 0.\n[STDOUT:BEGIN]\n0\n1\n2\n")
    assert "\n..._This content has been truncated to stay below " in result.text  # AFM's marker, mid-output
    assert result.text.endswith("\n2998\n2999\n[STDOUT:END]")  # the end of the output and the frame survive


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy not installed")
def test_code_can_use_numpy_under_the_sandbox_limits():
    result = code("import numpy as np\nprint(np.linalg.det(np.array([[2.0, 1.0], [1.0, 3.0]])).round(6))")
    assert result.ok and "[STDOUT:BEGIN]\n5.0\n[STDOUT:END]" in result.text


# --- web_search: local BM25 ------------------------------------------------------------------

FILLER = (
    "river mountain city history music garden market bridge winter engine library forest painting "
    "harbor railway festival school village island desert"
).split()
RELEVANT = {
    "venom-1": ("Platypus venom", "The male platypus has a venomous spur; platypus venom causes severe pain."),
    "venom-2": ("Monotremes", "Among monotremes only the platypus produces venom, from a spur on the hind leg."),
    "venom-3": ("Australian fauna", "The platypus lives in rivers of eastern Australia."),
}


def write_corpus(path, n_filler=197):
    rng = random.Random(7)
    docs = [{"id": f"f{i}", "title": " ".join(rng.sample(FILLER, 2)), "text": " ".join(rng.choices(FILLER, k=30)),
             "url": f"http://docs.invalid/f{i}"} for i in range(n_filler)]  # fmt: skip
    docs[50:50] = [{"id": doc_id, "title": title, "text": text} for doc_id, (title, text) in RELEVANT.items()]
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    return docs


def search_tool(config: LocalCorpusConfig, **settings) -> WebSearchTool:
    search = SearchToolConfig(enabled=True, backend="local", local=config, **settings)
    return WebSearchTool(search, LocalSearchBackend(config))


def test_bm25_ranks_the_relevant_documents_first(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    config = LocalCorpusConfig(path=tmp_path / "corpus.jsonl", index_dir=tmp_path / "index")
    index = CorpusIndex.open(config)
    assert [hit.document.id for hit in index.search("platypus venom", 3)] == ["venom-1", "venom-2", "venom-3"]
    assert index.search("zyzzyva quux", 5) == []
    result = run(search_tool(config, top_k=3)("platypus venom"))
    assert result.ok and result.meta["n_results"] == [3]
    assert result.text == (  # AFM's layout (verl/verl/tools/web_search_v2.py, _format_results_to_string)
        "Found 3 results:\n\n## Web Results\n"
        "1. [Platypus venom](corpus://venom-1)\ncorpus://venom-1\n"
        "The male platypus has a venomous spur; platypus venom causes severe pain.\n\n"
        "2. [Monotremes](corpus://venom-2)\ncorpus://venom-2\n"
        "Among monotremes only the platypus produces venom, from a spur on the hind leg.\n\n"
        "3. [Australian fauna](corpus://venom-3)\ncorpus://venom-3\nThe platypus lives in rivers of eastern Australia."
    )


def test_a_query_with_no_hits_says_so(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    result = run(search_tool(LocalCorpusConfig(path=tmp_path / "corpus.jsonl"))("zyzzyva quux"))
    assert result.ok and result.text == "No results found for query: 'zyzzyva quux'. Use a less specific query."
    assert not run(search_tool(LocalCorpusConfig(path=tmp_path / "corpus.jsonl"))("   ")).ok


def test_concurrent_first_searches_share_one_build(tmp_path):
    write_corpus(tmp_path / "corpus.jsonl")
    tool = search_tool(LocalCorpusConfig(path=tmp_path / "corpus.jsonl"), top_k=1)

    async def many():
        return await asyncio.gather(*(tool("platypus venom") for _ in range(6)))

    assert {result.text.splitlines()[3] for result in run(many())} == {"1. [Platypus venom](corpus://venom-1)"}


def test_snippets_show_the_window_with_the_query_words():
    text = "filler " * 200 + "the platypus has a venomous spur " + "filler " * 200
    snippet = best_snippet(text, ["platypus", "venomous"], 80)
    assert snippet.startswith("…") and snippet.endswith("…") and "platypus has a venomous spur" in snippet


def test_the_index_is_cached_and_rebuilt_when_the_corpus_changes(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(corpus)
    config = LocalCorpusConfig(path=corpus)
    CorpusIndex.open(config).close()
    target = index_path(config)
    assert target.parent == tmp_path and target.exists()
    built = target.stat().st_mtime_ns
    CorpusIndex.open(config).close()
    assert target.stat().st_mtime_ns == built  # not rebuilt
    with corpus.open("a") as file:
        file.write(json.dumps({"id": "new", "title": "Echidna", "text": "echidna spines"}) + "\n")
    assert [hit.document.id for hit in CorpusIndex.open(config).search("echidna", 5)] == ["new"]


def test_parquet_corpus_without_urls_and_a_missing_corpus(tmp_path):
    table = pa.table({"id": [1, 2], "title": ["Alpha", "Beta"], "text": ["gamma rays", "delta wing"]})
    pq.write_table(table, tmp_path / "c.parquet")
    result = run(search_tool(LocalCorpusConfig(path=tmp_path / "c.parquet"))("delta"))
    assert result.text.endswith("## Web Results\n1. [Beta](corpus://2)\ncorpus://2\ndelta wing")
    missing = run(search_tool(LocalCorpusConfig(path=tmp_path / "nope.jsonl"))("delta"))
    assert not missing.ok and "corpus file not found" in missing.text
