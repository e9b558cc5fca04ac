"""`factory pairs`: AutoCoA's "when to act" pairs from coa trajectories (factory/coa/pairs, docs/when_to_act.md).

The run folder (tests/pair_traces.py) holds eleven real distilled coa rows and closed-book rollouts; a
loopback server answers the recall requests as a strong model does (tests/pair_recall.py: a multi-hop
population question answered plausibly but wrongly from memory, well-known facts and short derivations
answered right, a floor it cannot settle without a calculator and a count that hangs on a date, both
scored unsure by its own double check, and one reply in prose instead of the JSON asked for).
"""

import json
from collections import Counter

import pytest
from loopback_server import ok
from pair_traces import CLOSED_BOOK, DANUBE, DEADPOOL, GARBAGE, READING, RECALL, coa_run

from factory.cli import main
from factory.coa.afm import parse_blocks, validate_afm
from factory.coa.pairs import PairsConfig, make_pairs
from factory.failures import format_failures
from factory.run_config import FactoryConfig
from factory.store import Store

THAI, NOBEL_ID, FLOOR = "coa:synth:depth/depth-3f426491a2f9", "coa:nq/h16e1d23474b9", "coa:MATH500/21"
LEFT_OUT = {"both_wrong": 1, "too_few_rollouts": 1, "closed_book_unreliable": 1, "llm_error": 1, "no_tool_call": 1,
            "no_reference": 1, "task_not_found": 1, "recall_unsure": 1}  # fmt: skip
WEB_SIDE = ["think", "plan", "think", "suggested_answer", "think", "double_check", "answer"]  # no tool, nothing skipped


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


def tags(text: str) -> list[str]:
    return [block.tag for block in parse_blocks(text)]


def test_a_wrong_recall_is_a_when_to_act_pair_against_the_trajectorys_own_tool_call(paired):
    config, outcome = paired
    pair = stored_pairs(config.run_dir)[THAI]
    turns = trajectory_turns(config.run_dir, THAI)
    assert pair["kind"] == "when_to_act" and pair["source"] == "coa" and pair["task_id"] == THAI.removeprefix("coa:")
    assert json.loads(pair["prompt"]) == turns[:1] and turns[1]["role"] == "assistant"
    assert json.loads(pair["chosen"]) == [turns[1]]  # byte for byte: think, plan, think, the first search
    assert turns[1]["content"].endswith("<web_search>\nISO 4217 THB currency\n</web_search>\n")
    rejected = json.loads(pair["rejected"])[0]["content"]
    assert rejected.startswith("<think>\nThe question chains three facts") and rejected.endswith(
        "Every link of the chain is certain, and the population is right to the nearest million.\nscore: 3\n"
        "</double_check>\n<answer>\n54 million\n</answer>"
    )
    evidence = json.loads(pair["evidence"])
    assert evidence["rule"] == "recall_wrong" and evidence["recall"]["answer"] == "54 million"
    assert evidence["recall"]["score"] == 3 and "its own score 3" in evidence["detail"]
    assert evidence["check"]["checker"] == "qa" and evidence["check"]["correct"] is False
    assert evidence["trajectory"] == {"correct": True, "tool": "web_search"} and evidence["closed_book"] is None


def test_every_recall_side_follows_the_grammar_its_variants_trained_rows_follow(paired):
    config, _ = paired
    pairs = stored_pairs(config.run_dir)
    sides = {trajectory: json.loads(pair["rejected" if pair["kind"] == "when_to_act" else "chosen"])[0]["content"]
             for trajectory, pair in pairs.items()}  # fmt: skip
    whole_row = "".join(turn["content"] for turn in trajectory_turns(config.run_dir, THAI)[1:])  # stage 2
    assert validate_afm(whole_row, "mas", "any").ok and tags(whole_row)[-3:] == WEB_SIDE[-3:]
    for trajectory in (THAI, NOBEL_ID):  # the web agent: plan, suggested answer, double check, no tool
        assert tags(sides[trajectory]) == WEB_SIDE and validate_afm(sides[trajectory], "mas", "any").ok
    floor = sides[FLOOR]  # the code agent: plan, (think, code, observation, reflection)*0, think, answer
    assert tags(floor) == ["plan", "think", "answer"] and validate_afm(floor, "code", "boxed").ok
    assert floor.endswith("greatest integer below it is 13536.\n</think>\n<answer>\n\\boxed{13536}\n</answer>")
    assert "score" not in floor and "Double" not in floor  # the code agent writes no double check nor score


def test_an_unsure_code_answer_that_is_wrong_is_still_the_side_to_reject(paired):
    config, _ = paired
    pair = stored_pairs(config.run_dir)[FLOOR]
    turns = trajectory_turns(config.run_dir, FLOOR)
    assert pair["kind"] == "when_to_act" and json.loads(pair["chosen"]) == [turns[1]]  # plan, think, the code
    evidence = json.loads(pair["evidence"])
    assert evidence["recall"] == {**evidence["recall"], "answer": "\\boxed{13536}", "score": 2}
    assert evidence["check"] == {
        "checker": "math",
        "correct": False,
        "score": 0.0,
        "detail": evidence["check"]["detail"],
    }


def test_a_right_recall_the_model_knows_closed_book_is_a_when_not_to_act_pair(paired):
    config, outcome = paired
    pair = stored_pairs(config.run_dir)[NOBEL_ID]
    turns = trajectory_turns(config.run_dir, NOBEL_ID)
    assert pair["kind"] == "when_not_to_act" and json.loads(pair["rejected"]) == [turns[1]]
    chosen = json.loads(pair["chosen"])[0]
    assert chosen["role"] == "assistant" and "<web_search>" not in chosen["content"]
    assert chosen["content"].endswith("score: 4\n</double_check>\n<answer>\nWilhelm Conrad Röntgen\n</answer>")
    evidence = json.loads(pair["evidence"])
    assert evidence["check"]["correct"] is True and evidence["rule"] == "closed_book_right"
    assert evidence["closed_book"] == {"model": CLOSED_BOOK, "n": 8, "n_correct": 8, "pass_rate": 1.0}
    assert outcome.rollouts_model == CLOSED_BOOK  # the one label the run's rollouts hold


def test_every_other_trajectory_is_left_out_with_its_reason_and_no_request_is_paid_for_them(paired, server):
    config, outcome = paired
    assert outcome.trajectories == 11 and set(stored_pairs(config.run_dir)) == {THAI, NOBEL_ID, FLOOR}
    assert outcome.made == Counter(when_to_act=2, when_not_to_act=1) and outcome.left_out == LEFT_OUT
    assert outcome.stored == {"when_to_act": 2, "when_not_to_act": 1}
    assert "2 judged closed-book rollouts < 8" in outcome.examples["too_few_rollouts"]
    assert "3/8 = 0.38 < 0.8" in outcome.examples["closed_book_unreliable"]
    assert "wrong too" in outcome.examples["both_wrong"]
    assert outcome.examples["recall_unsure"].startswith("coa:nq/h98258a8c7e7a: its own double check scored 2")
    asked = " ".join(json.dumps(request["body"]) for request in server.requests)
    assert all(question not in asked for question in (DANUBE, DEADPOOL, "first declaration of human rights"))
    assert len(server.requests) == 7 + 3  # seven recall answers, and the prose reply asked three times


def test_a_malformed_row_is_a_counted_reason_and_the_stage_goes_on(paired):
    config, first = paired
    broken = {"coa:broken/no-content": '[{"role": "user"}]', "coa:broken/not-json": "<think>\nx\n</think>",
              "coa:broken/no-prompt": json.dumps([{"role": "assistant", "content": "<web_search>\nq\n</web_search>\n"}])}  # fmt: skip
    with Store.open(config.run_dir) as store:
        for trajectory_id, turns in broken.items():
            store.insert_query("trajectories", "SELECT * REPLACE (? AS trajectory_id, ? AS turns) "
                               "FROM trajectories WHERE trajectory_id = ?", [trajectory_id, turns, THAI])  # fmt: skip
    outcome = make_pairs(config, PairsConfig())
    assert outcome.trajectories == 14 and outcome.left_out == {**LEFT_OUT, "malformed_turns": 3}
    assert outcome.made == first.made and "internal_error" not in outcome.left_out
    example = outcome.examples["malformed_turns"]
    assert example == 'coa:broken/no-content: turn 0 has no string role and content: {"role": "user"}'


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
    assert set(stored_pairs(config.run_dir)) == {THAI, FLOOR}
    assert outcome.left_out["too_few_rollouts"] == 3 and outcome.stored == {"when_to_act": 2, "when_not_to_act": 0}


def test_the_command_prints_pairs_by_kind_and_the_reasons_left_out(paired, server, capsys):
    config, _ = paired
    argv = ["pairs", str(config.run_dir), "--model", "loopback", "--base-url", server.base_url, "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "pairs from 11 verified coa trajectories; recall model loopback" in out
    assert f"rollouts of '{CLOSED_BOOK}', pass rate >= 0.8 over >= 8 judged" in out
    assert "pairs by kind: when_to_act 2, when_not_to_act 1" in out and "left out: 8" in out
    for reason in LEFT_OUT:
        assert f"1 × {reason}  [coa:" in out
    missing = config.run_dir.parent / "nothing-here"
    assert main(["pairs", str(missing), "--model", "loopback", "--base-url", server.base_url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}: no run store (factory.sqlite)") and err.count("\n") == 1
    assert not missing.exists()
    asked = len(server.requests)
    assert main([*argv, "--checker", "exact-match"]) == 2  # a typo stops the command before any request
    assert capsys.readouterr().err.startswith("error: pairs: unknown checker 'exact-match' (known: code, ")
    assert len(server.requests) == asked
