"""The `grounded` and `template` filters over a real store of coa / import / refine rows: exact verdicts and reasons."""

from __future__ import annotations

import duckdb
import pytest
from coa_quality_rows import GOOD, completion, seed_quality_run
from filter_rows import add_coa

from factory.coa.afm.scores import reflection_text
from factory.errors import ConfigError
from factory.filters import parse_filters, run_filters
from factory.filters.sql import quote
from factory.filters.template import block_words_sql
from factory.store import Store

REFINE = {"refine:p1": (True, None), "refine:p2": (True, None)}
THIS_RESULT = "template opening: reflection 'this result shows' opens 3 of 9 reflection blocks (33.3%)"
SO_THE_ANSWER = "template opening: think 'so the answer' opens 3 of 14 think blocks (21.4%)"


@pytest.fixture
def run_dir(tmp_path):
    return seed_quality_run(tmp_path / "run")


def verdicts(run_dir, *filters: dict) -> dict[str, tuple[bool, str | None]]:
    """trajectory id -> (keep, reason) of the one filter given (the others only run alongside)."""
    funnel = run_filters(run_dir, config=parse_filters(list(filters), "test.yaml"))
    assert funnel is not None
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query(
            "SELECT trajectory_id, keep, reason FROM filter_verdicts WHERE filter = ?", [filters[0]["name"]]
        )
    return {tid: (keep, reason) for tid, keep, reason in rows}


def test_grounded_drops_rows_with_an_ungrounded_claim_and_keeps_unknown_ones(run_dir):
    assert verdicts(run_dir, {"name": "grounded", "kind": "grounded"}) == {
        "coa:a": (True, None),  # 3 of 3 grounded
        "coa:b": (False, "ungrounded claims: 1 of 3 ('he was born before 1871')"),
        "coa:c": (True, None),  # grounded, though recalled first: allowed by default
        "coa:d": (True, "grounding unknown: no claims recorded"),  # written before the fields: a note
        "import:e": (False, "ungrounded claims: 1 of 1 ('385')"),
        "coa:u": (False, "ungrounded claims: 1 of 1"),  # no list of ungrounded claims: nothing to quote
        **REFINE,
    }


def test_grounded_share_unknown_rows_and_recalled_answers(run_dir):
    spec = {"name": "strict", "kind": "grounded", "min_share": 0.5, "unknown_passes": False,
            "allow_answer_before_tool": False}  # fmt: skip
    recalled = "answer before tool: the final answer was written before the first observation"
    assert verdicts(run_dir, spec) == {
        "coa:a": (True, None),
        "coa:b": (True, None),  # 2 of 3 >= 0.5
        "coa:c": (False, recalled),
        "coa:d": (False, "grounding unknown: no claims recorded"),
        "import:e": (False, "ungrounded claims: 1 of 1 ('385')"),
        "coa:u": (False, recalled),  # judged before its share
        **REFINE,
    }


def test_template_drops_rows_opening_a_block_with_a_frequent_opening(run_dir):
    found = verdicts(run_dir, {"name": "template", "kind": "template", "where": "verified"})
    assert found == {
        "coa:a": (False, THIS_RESULT),  # also opens a think with "so the answer": the reflection is named first
        "coa:b": (False, THIS_RESULT),
        "coa:c": (True, None),
        "coa:d": (False, SO_THE_ANSWER),
        "import:e": (True, None),
        "coa:u": (True, None),  # not verified: outside the filter, and its blocks count in no share
        **REFINE,
    }


def test_template_over_every_row_counts_the_unverified_one_too(run_dir):
    found = verdicts(run_dir, {"name": "template", "kind": "template", "blocks": ["reflection"]})
    reason = "template opening: reflection 'this result shows' opens 4 of 10 reflection blocks (40.0%)"
    assert found == {"coa:a": (False, reason), "coa:b": (False, reason), "coa:u": (False, reason),
                     "coa:c": (True, None), "coa:d": (True, None), "import:e": (True, None), **REFINE}  # fmt: skip


def test_template_threshold_and_phrases(run_dir):
    # 3 of 9 reflections (33.3%) is under 0.34: only the phrases drop, matched word by word, in any case.
    spec = {"name": "phrases", "kind": "template", "max_share": 0.34, "phrases": ["Checking it:", "a first ANSWER"],
            "where": "verified"}  # fmt: skip
    assert verdicts(run_dir, spec) == {
        "coa:a": (True, None),
        "coa:b": (False, "template phrase: think opens with 'a first ANSWER'"),
        "coa:c": (True, None),
        "coa:d": (True, None),
        "import:e": (False, "template phrase: think opens with 'Checking it:'"),
        "coa:u": (True, None),
        **REFINE,
    }


@pytest.mark.parametrize(("max_share", "dropped"), [(0.5, False), (0.49, True)])
def test_template_drops_only_above_max_share(run_dir, max_share, dropped):
    # Over a, b, c, e: "this result shows" opens 3 of 6 reflections, exactly 0.5.
    spec = {"name": "edge", "kind": "template", "max_share": max_share, "blocks": ["reflection"],
            "where": "trajectory_id IN ('coa:a', 'coa:b', 'coa:c', 'import:e')"}  # fmt: skip
    reason = "template opening: reflection 'this result shows' opens 3 of 6 reflection blocks (50.0%)"
    found = verdicts(run_dir, spec)
    assert found["coa:a"] == found["coa:b"] == ((False, reason) if dropped else (True, None))
    assert found["coa:c"] == found["coa:d"] == (True, None)


@pytest.mark.parametrize("min_rows", [2, 1])
def test_template_four_word_openings_need_min_rows(run_dir, min_rows):
    # "this result shows the" opens 2 of 9 reflections (22.2%), both in row a: a template only with min_rows 1.
    spec = {"name": "four", "kind": "template", "words": 4, "min_rows": min_rows, "where": "verified"}
    think = "template opening: think 'so the answer is' opens 3 of 14 think blocks (21.4%)"
    reflection = "template opening: reflection 'this result shows the' opens 2 of 9 reflection blocks (22.2%)"
    found = verdicts(run_dir, spec)
    assert found["coa:a"] == (False, think if min_rows == 2 else reflection)
    assert found["coa:b"] == found["coa:d"] == (False, think)
    assert found["coa:c"] == found["import:e"] == (True, None)


def test_a_new_row_can_make_an_opening_a_template_for_old_rows(run_dir):
    spec = {"name": "template", "kind": "template", "blocks": ["reflection"], "where": "verified"}
    assert verdicts(run_dir, spec)["coa:c"] == (True, None)  # "the page says": 1 of 9
    with Store.open(run_dir) as store:
        steps = [
            ("Look.", "web_search", "q", "The page says one."),
            ("Again.", "web_search", "r", "The page says two."),
        ]
        add_coa(store, "coa:g", "Another?", 30, completion=completion(steps, "Done.", "two"))
    found = verdicts(run_dir, spec)  # 3 of 11 reflections now: every row's verdict is recomputed
    reason = "template opening: reflection 'the page says' opens 3 of 11 reflection blocks (27.3%)"
    assert found["coa:c"] == found["coa:g"] == (False, reason)


def test_rating_lines_are_not_an_opening():
    def words(reflection: str) -> list:
        text = f"<plan>p</plan><reflection>{reflection}</reflection>"
        return duckdb.sql(block_words_sql(f"SELECT 'x' AS trajectory_id, {quote(text)} AS completion")).fetchall()

    assert words(reflection_text(GOOD)) == []  # ratings only: no opening at all
    assert words(reflection_text(GOOD, "The page says Seine.")) == [
        ("x", "reflection", 1, ["the", "page", "says", "seine"])
    ]
    assert words("(2) **Tool Effectiveness**: Poor\nI'll retry.") == [("x", "reflection", 1, ["i'll", "retry"])]


def test_bad_configs_stop_with_one_line():
    with pytest.raises(ConfigError, match="set max_share, phrases or both"):
        parse_filters([{"name": "t", "kind": "template", "max_share": None}], "f.yaml")
    with pytest.raises(ConfigError, match="field 'min_shar'"):
        parse_filters([{"name": "g", "kind": "grounded", "min_shar": 0.5}], "f.yaml")
    with pytest.raises(ConfigError, match="blocks"):
        parse_filters([{"name": "t", "kind": "template", "blocks": ["plan"]}], "f.yaml")
    assert parse_filters([{"name": "g", "kind": "grounded"}], "f.yaml").filters[0].sources == ["coa", "import"]
