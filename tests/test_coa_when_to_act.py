"""`factory pairs`: AutoCoA's "when to act" pairs from coa trajectories (factory/coa/pairs, docs/when_to_act.md).

The run folder (tests/pair_traces.py) holds nine real distilled coa rows and closed-book rollouts; a
loopback server answers the recall requests as a strong model does (a multi-hop population question
answered plausibly but wrongly from memory, well-known facts and short derivations answered right, and
one reply in prose instead of the JSON asked for).
"""

import json
from collections import Counter

import pytest
from loopback_server import ok
from pair_traces import CLOSED_BOOK, DANUBE, DEADPOOL, GARBAGE, READING, RECALL, coa_run

from factory.checks import CheckResult
from factory.cli import main
from factory.coa.pairs import PairsConfig, decide, make_pairs
from factory.coa.pairs.evidence import ClosedBook
from factory.coa.pairs.points import DecisionPoint
from factory.coa.pairs.recall import Recall, RecallReply
from factory.failures import format_failures
from factory.run_config import FactoryConfig
from factory.store import Store

THAI, NOBEL_ID = "coa:synth:depth/depth-3f426491a2f9", "coa:nq/h16e1d23474b9"
LEFT_OUT = {"both_wrong": 1, "too_few_rollouts": 1, "closed_book_unreliable": 1, "llm_error": 1, "no_tool_call": 1,
            "no_reference": 1, "task_not_found": 1}  # fmt: skip


@pytest.fixture
def paired(tmp_path, server, fast_config):
    """The run folder after one `make_pairs`: (config, outcome)."""
    run_dir = tmp_path / "run"
    coa_run(run_dir)
    for marker, reply in RECALL.items():
        server.route(marker, ok(reply))
    server.route(READING, *[ok(GARBAGE)] * 3)  # the first ask and the client's two re-asks
    config = FactoryConfig(run_dir=run_dir, llm=fast_config())
    return config, make_pairs(config, PairsConfig())


def stored_pairs(run_dir) -> dict[str, dict]:
    with Store.open(run_dir, read_only=True) as store:
        rows = store.query("SELECT pair_id, kind, source, task_id, trajectory_id, prompt, chosen, rejected, evidence, "
                           "created_at FROM preference_pairs ORDER BY 1")  # fmt: skip
    keys = ("pair_id", "kind", "source", "task_id", "trajectory_id", "prompt", "chosen", "rejected", "evidence")
    return {row[4]: {**dict(zip(keys, row)), "created_at": row[9]} for row in rows}


def trajectory_turns(run_dir, trajectory_id: str) -> list[dict]:
    with Store.open(run_dir, read_only=True) as store:
        turns = json.loads(store.query("SELECT turns FROM trajectories WHERE trajectory_id = ?", [trajectory_id])[0][0])
    return [{"role": turn["role"], "content": turn["content"]} for turn in turns]


def test_a_wrong_recall_is_a_when_to_act_pair_against_the_trajectorys_own_tool_call(paired):
    config, outcome = paired
    pair = stored_pairs(config.run_dir)[THAI]
    turns = trajectory_turns(config.run_dir, THAI)
    assert pair["kind"] == "when_to_act" and pair["source"] == "coa" and pair["task_id"] == THAI.removeprefix("coa:")
    assert json.loads(pair["prompt"]) == turns[:1] and turns[1]["role"] == "assistant"
    assert json.loads(pair["chosen"]) == [turns[1]]  # byte for byte: think, plan, think, the first search
    assert turns[1]["content"].endswith("<web_search>\nISO 4217 THB currency\n</web_search>\n")
    rejected = json.loads(pair["rejected"])[0]["content"]
    assert rejected.startswith("<think>\nTHB is the Thai baht") and rejected.endswith(
        "\n</think>\n<answer>\n54 million\n</answer>"
    )
    evidence = json.loads(pair["evidence"])
    assert evidence["rule"] == "recall_wrong" and evidence["recall"]["answer"] == "54 million"
    assert evidence["check"]["checker"] == "qa" and evidence["check"]["correct"] is False
    assert evidence["trajectory"] == {"correct": True, "tool": "web_search"} and evidence["closed_book"] is None


def test_a_right_recall_the_model_knows_closed_book_is_a_when_not_to_act_pair(paired):
    config, outcome = paired
    pair = stored_pairs(config.run_dir)[NOBEL_ID]
    turns = trajectory_turns(config.run_dir, NOBEL_ID)
    assert pair["kind"] == "when_not_to_act" and json.loads(pair["rejected"]) == [turns[1]]
    chosen = json.loads(pair["chosen"])[0]
    assert chosen["role"] == "assistant" and "<web_search>" not in chosen["content"]
    assert chosen["content"].endswith("</think>\n<answer>\nWilhelm Conrad Röntgen\n</answer>")
    evidence = json.loads(pair["evidence"])
    assert evidence["check"]["correct"] is True and evidence["rule"] == "closed_book_right"
    assert evidence["closed_book"] == {"model": CLOSED_BOOK, "n": 8, "n_correct": 8, "pass_rate": 1.0}
    assert outcome.rollouts_model == CLOSED_BOOK  # the one label the run's rollouts hold


def test_every_other_trajectory_is_left_out_with_its_reason_and_no_request_is_paid_for_them(paired, server):
    config, outcome = paired
    assert outcome.trajectories == 9 and set(stored_pairs(config.run_dir)) == {THAI, NOBEL_ID}
    assert outcome.made == Counter(when_to_act=1, when_not_to_act=1) and outcome.left_out == LEFT_OUT
    assert outcome.stored == {"when_to_act": 1, "when_not_to_act": 1}
    assert "2 judged closed-book rollouts < 8" in outcome.examples["too_few_rollouts"]
    assert "3/8 = 0.38 < 0.8" in outcome.examples["closed_book_unreliable"]
    assert "wrong too" in outcome.examples["both_wrong"]
    asked = " ".join(json.dumps(request["body"]) for request in server.requests)
    assert all(question not in asked for question in (DANUBE, DEADPOOL, "first declaration of human rights"))
    assert len(server.requests) == 5 + 3  # five recall answers, and the prose reply asked three times


def test_a_reply_that_is_not_the_json_asked_for_is_a_recorded_failure_not_a_pair(paired):
    config, outcome = paired
    assert outcome.examples["llm_error"].startswith("coa:nq/h0e4283f11026: schema: not valid JSON")
    with Store.open(config.run_dir, read_only=True) as store:
        failed = store.query("SELECT stage, error_kind, attempts FROM llm_calls WHERE status = 'error'")
    assert failed == [("coa_pairs", "schema", 3)]
    assert "schema: not valid JSON" in format_failures(config.run_dir, ["coa"])  # the coa path's failures


def test_a_rerun_asks_only_what_failed_and_writes_no_row_twice(paired, server):
    config, first = paired
    before, rows = len(server.requests), stored_pairs(config.run_dir)
    again = make_pairs(config, PairsConfig())
    new = server.requests[before:]
    assert new and all(READING in json.dumps(request["body"]) for request in new)  # only the failed call again
    assert stored_pairs(config.run_dir) == rows  # same ids, same text, first created_at kept
    assert (again.made, again.left_out) == (first.made, first.left_out)


def test_other_closed_book_evidence_removes_a_pair_it_no_longer_supports(paired, server):
    config, _ = paired
    settings = PairsConfig(rollouts_model="a-label-with-no-rollouts", min_rollouts=8)
    outcome = make_pairs(config, settings)
    assert set(stored_pairs(config.run_dir)) == {THAI}
    assert outcome.left_out["too_few_rollouts"] == 3 and outcome.stored == {"when_to_act": 1, "when_not_to_act": 0}


def test_the_command_prints_pairs_by_kind_and_the_reasons_left_out(paired, server, capsys):
    config, _ = paired
    argv = ["pairs", str(config.run_dir), "--model", "loopback", "--base-url", server.base_url, "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "pairs from 9 verified coa trajectories; recall model loopback" in out
    assert f"rollouts of '{CLOSED_BOOK}', pass rate >= 0.8 over >= 8 judged" in out
    assert "pairs by kind: when_to_act 1, when_not_to_act 1" in out and "left out: 7" in out
    for reason in LEFT_OUT:
        assert f"1 × {reason}  [coa:" in out
    missing = config.run_dir.parent / "nothing-here"
    assert main(["pairs", str(missing), "--model", "loopback", "--base-url", server.base_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}: no run store (factory.duckdb)") and err.count("\n") == 1
    assert not missing.exists()
    asked = len(server.requests)
    assert main([*argv, "--checker", "exact-match"]) == 2  # a typo stops the command before any request
    assert capsys.readouterr().err.startswith("error: pairs: unknown checker 'exact-match' (known: code, ")
    assert len(server.requests) == asked


POINT = DecisionPoint("t", "task", "mas", "qa", True, [], {"role": "assistant", "content": "x"}, "web_search")
RIGHT, WRONG = CheckResult(correct=True, score=1.0, detail="em"), CheckResult(correct=False, score=0.0, detail="em")


@pytest.mark.parametrize(
    "check, correct, closed, expected",
    [
        (WRONG, True, None, "when_to_act"),
        (WRONG, None, None, "when_to_act"),  # the trajectory unjudged: the tool path is not shown wrong
        (WRONG, False, None, "both_wrong"),
        (RIGHT, True, ClosedBook("m", 8, 7), "when_not_to_act"),  # 0.875 >= 0.8
        (RIGHT, True, ClosedBook("m", 10, 8), "when_not_to_act"),  # exactly 0.8
        (RIGHT, True, ClosedBook("m", 8, 6), "closed_book_unreliable"),
        (RIGHT, True, ClosedBook("m", 7, 7), "too_few_rollouts"),  # one lucky streak is not evidence
        (RIGHT, True, None, "too_few_rollouts"),
        (CheckResult(correct=False, score=0.0, error="math-verify timed out"), True, None, "check_undecided"),
    ],
)
def test_the_rule(check, correct, closed, expected):
    point = DecisionPoint(**{**POINT.__dict__, "correct": correct})
    decision = decide(check, point, closed, PairsConfig())
    assert (decision.kind or decision.reason) == expected


def test_the_recall_reply_is_plain_text_laid_out_in_afms_two_blocks():
    with pytest.raises(ValueError, match="<web_search> opened inside <answer>"):
        RecallReply(think="I would search.", answer="<web_search>Reading owner</web_search>")
    reply = RecallReply(think="Pairs of -1: the sum is \\boxed{-50}.", answer="-50")
    code = Recall().parse(reply, "code", "math")
    assert code.text == "<think>\nPairs of -1: the sum is -50.\n</think>\n<answer>\n\\boxed{-50}\n</answer>"
    assert code.answer == "\\boxed{-50}"


def test_only_a_verdict_against_a_pair_removes_a_stored_one():
    undecided = decide(CheckResult(correct=False, score=0.0, error="timed out"), POINT, None, PairsConfig())
    unsupported = decide(RIGHT, POINT, ClosedBook("m", 8, 2), PairsConfig())
    assert not undecided.rules_out and unsupported.rules_out  # a checker that could not run says nothing
