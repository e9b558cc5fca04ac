"""factory/mask with `train_on_observations` (AutoCoA's stage 3): which observation tokens train, token by token.

A tool turn trains its content (unless flagged 0); a user turn trains only when the row flags it (the
AgentRefine convention writes the world's observations as user turns), from its content through its
end-of-turn marker. Without the switch the flags change nothing: the default render is the same with or
without them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from render_samples import END  # noqa: E402

from factory.mask.render import render  # noqa: E402
from factory.mask.tiny import tiny_tokenizer  # noqa: E402
from train.show import trained_segments  # noqa: E402

SEEN = "Observation: There is no iron key here."


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def game(flag_key: str, flag, tool_flag=None) -> dict:
    """A refine-like row in messages form: the task, a mistake, the world's refusal, a fix, a tool result."""
    seen = {"role": "user", "content": SEEN, **({flag_key: flag} if flag is not None else {})}
    tool = {"role": "tool", "content": "The chest opens.", **({"weight": tool_flag} if tool_flag is not None else {})}
    return {"id": "g", "messages": [
        {"role": "user", "content": "Open the chest."},
        {"role": "assistant", "content": "Action: take(item=iron key)", "weight": 0},
        seen,
        {"role": "assistant", "content": "Action: open(chest)", "weight": 1},
        tool,
        {"role": "assistant", "content": "Done.", "weight": 1},
    ]}  # fmt: skip


def test_a_flagged_user_observation_trains_through_its_end_marker(tok):
    rendered = render(game("weight", 1), tok, train_on_observations=True)
    assert trained_segments(rendered, tok) == [
        SEEN + END,
        "Action: open(chest)" + END,
        "The chest opens.",
        "Done." + END,
    ]
    suffixed = render(game("weight", 1), tok, train_on_observations=True, train_turn_suffix=True)
    assert trained_segments(suffixed, tok)[0] == SEEN + END + "\n"  # as an assistant turn takes the newline


def test_without_the_switch_the_flags_change_nothing(tok):
    plain = render(game("weight", None), tok)
    for row in (game("weight", 1), game("train", True), game("weight", 1, tool_flag=1)):
        flagged = render(row, tok)
        assert (flagged.input_ids, flagged.labels) == (plain.input_ids, plain.labels)
    assert trained_segments(plain, tok) == ["Action: open(chest)" + END, "Done." + END]


def test_an_unflagged_user_turn_never_trains_and_a_tool_turn_flagged_0_stays_out(tok):
    unflagged = render(game("weight", None), tok, train_on_observations=True)
    assert trained_segments(unflagged, tok) == ["Action: open(chest)" + END, "The chest opens.", "Done." + END]
    zero = render(game("weight", 0, tool_flag=0), tok, train_on_observations=True)
    assert trained_segments(zero, tok) == ["Action: open(chest)" + END, "Done." + END]


def test_a_blank_flagged_observation_never_trains(tok):
    row = game("weight", 1)
    row["messages"][2]["content"] = " \n"
    assert trained_segments(render(row, tok, train_on_observations=True), tok)[0] == "Action: open(chest)" + END


def test_sharegpt_human_turns_flagged_loss_true_train_alike(tok):
    row = {"conversations": [
        {"from": "human", "value": "Open the chest."},
        {"from": "gpt", "value": "Action: take(item=iron key)", "loss": False},
        {"from": "human", "value": SEEN, "loss": True},
        {"from": "gpt", "value": "Action: open(chest)"},
    ]}  # fmt: skip
    assert trained_segments(render(row, tok, train_on_observations=True), tok) == [
        SEEN + END,
        "Action: open(chest)" + END,
    ]
    assert trained_segments(render(row, tok), tok) == ["Action: open(chest)" + END]
