"""The answer from recall as a side of a pair: its layout in the variant's grammar, and the rule.

factory/coa/pairs/layout.py lays the recall reply out as the trained rows of its variant are written
(the web agent: think, plan, think, suggested_answer, think, double_check, answer; the code agent:
plan, think, answer), and rule.py decides what a side the model itself doubts is worth. The replies
here are the kind a strong model gives the recall prompt (prompts/coa/recall.md).
"""

import pytest

from factory.checks import CheckResult
from factory.coa.afm import parse_blocks, validate_afm
from factory.coa.pairs import PairsConfig, decide
from factory.coa.pairs.evidence import ClosedBook
from factory.coa.pairs.points import DecisionPoint
from factory.coa.pairs.recall import Recall, RecallReply
from factory.coa.pairs.rule import unanswered

POINT = DecisionPoint("t", "task", "mas", "qa", True, [], {"role": "assistant", "content": "x"}, "web_search")
RIGHT, WRONG = CheckResult(correct=True, score=1.0, detail="em"), CheckResult(correct=False, score=0.0, detail="em")
SUM = {  # MATH500/16 answered from recall
    "plan_think": "An alternating sum of 1 to 100 falls apart into equal pairs.",
    "steps": ["Pair the terms: (1-2) + (3-4) + ... + (99-100).", "Count the pairs and add their values."],
    "think": "There are 50 pairs, each -1, so the sum is \\boxed{-50}.",
    "answer": "-50",
    "check_think": "The odd terms sum to 2500 and the even ones to 2550: -50 again.",
    "comment": "Two derivations give -50.",
    "score": 4,
}
CAPITAL = {  # a web question answered from recall
    "plan_think": "The capital of Australia is a single fact I know.",
    "steps": ["Recall the capital of Australia."],
    "think": "Australia's capital is Canberra, chosen as a compromise between Sydney and Melbourne.",
    "answer": "Canberra",
    "check_think": "The question asks for the capital, not the largest city; Sydney is the usual wrong answer.",
    "comment": "Certain: Canberra has been the seat of government since 1927.",
    "score": 4,
}


def test_a_web_side_is_a_whole_afm_completion_without_a_tool():
    side = Recall().parse(RecallReply(**CAPITAL), "mas", "qa")
    assert [block.tag for block in parse_blocks(side.text)] == [
        "think", "plan", "think", "suggested_answer", "think", "double_check", "answer"
    ]  # fmt: skip
    assert side.verdict.ok and validate_afm(side.text, "mas", "any").ok and side.answer == "Canberra"
    assert "<plan>\n1. Recall the capital of Australia.\n</plan>" in side.text
    assert (
        "<double_check>\nCertain: Canberra has been the seat of government since 1927.\nscore: 4\n</double_check>"
        in (side.text)
    )


def test_a_code_side_is_plan_think_answer_with_the_box_only_in_the_answer():
    side = Recall().parse(RecallReply(**SUM), "code", "math")
    assert side.text == (
        "<plan>\n1. Pair the terms: (1-2) + (3-4) + ... + (99-100).\n2. Count the pairs and add their values.\n"
        "</plan>\n<think>\nThere are 50 pairs, each -1, so the sum is -50.\n</think>\n<answer>\n\\boxed{-50}\n</answer>"
    )
    assert side.verdict.ok and side.answer == "\\boxed{-50}" and side.score == 4


def test_a_reply_that_writes_tags_fails_its_schema():
    with pytest.raises(ValueError, match="<web_search> opened inside <suggested_answer>"):
        RecallReply(**{**CAPITAL, "answer": "<web_search>capital of Australia</web_search>"})
    with pytest.raises(ValueError, match="<answer> opened inside <double_check>"):
        RecallReply(**{**CAPITAL, "comment": "Sure. <answer>Canberra</answer>"})


def test_a_side_the_grammar_refuses_is_a_reason_not_a_pair():
    quoted = {**SUM, "think": "Pairs of -1 give -50; I would give this score: 4/4."}  # a verifier's score
    side = Recall().parse(RecallReply(**quoted), "code", "math")
    assert not side.verdict.ok and side.verdict.rule == "think_scores"
    refused = unanswered(side, "code")
    assert refused.reason == "recall_grammar" and refused.rules_out and "think_scores" in refused.detail


def test_an_unsure_web_answer_is_no_answer_at_all():
    """Under the web agent's instruction a double check <= 2 re-plans: the side cannot end in <answer>."""
    side = Recall().parse(RecallReply(**{**CAPITAL, "score": 2}), "mas", "qa")
    assert side.verdict.rule == "double_check_outcome"  # what the grammar says of an answer laid out after it
    assert unanswered(side, "mas").reason == "recall_unsure"
    assert unanswered(Recall().parse(RecallReply(**{**SUM, "score": 2}), "code", "math"), "code") is None
    assert unanswered(Recall().parse(RecallReply(**CAPITAL), "mas", "qa"), "mas") is None


@pytest.mark.parametrize(
    "check, score, correct, closed, expected",
    [
        (WRONG, 3, True, None, "when_to_act"),
        (WRONG, 3, None, None, "when_to_act"),  # the trajectory unjudged: the tool path is not shown wrong
        (WRONG, 3, False, None, "both_wrong"),
        (WRONG, 2, True, None, "when_to_act"),  # a code agent unsure and wrong: it should have run code
        (RIGHT, 4, True, ClosedBook("m", 8, 7), "when_not_to_act"),  # 0.875 >= 0.8
        (RIGHT, 3, True, ClosedBook("m", 10, 8), "when_not_to_act"),  # exactly 0.8
        (RIGHT, 2, True, ClosedBook("m", 8, 8), "recall_unsure"),  # right, but not a confident direct answer
        (RIGHT, 4, True, ClosedBook("m", 8, 6), "closed_book_unreliable"),
        (RIGHT, 4, True, ClosedBook("m", 7, 7), "too_few_rollouts"),  # one lucky streak is not evidence
        (RIGHT, 4, True, None, "too_few_rollouts"),
        (CheckResult(correct=False, score=0.0, error="math-verify timed out"), 4, True, None, "check_undecided"),
    ],
)
def test_the_rule(check, score, correct, closed, expected):
    point = DecisionPoint(**{**POINT.__dict__, "correct": correct})
    decision = decide(check, score, point, closed, PairsConfig())
    assert (decision.kind or decision.reason) == expected


def test_only_a_verdict_against_a_pair_removes_a_stored_one():
    undecided = decide(CheckResult(correct=False, score=0.0, error="timed out"), 4, POINT, None, PairsConfig())
    unsupported = decide(RIGHT, 4, POINT, ClosedBook("m", 8, 2), PairsConfig())
    unsure = decide(RIGHT, 2, POINT, ClosedBook("m", 8, 8), PairsConfig())
    assert not undecided.rules_out and unsupported.rules_out and unsure.rules_out  # a checker that could not run
