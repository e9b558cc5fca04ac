"""factory/mask: which tokens train, checked token by token on a real tokenizer.

The expected trained texts are written out by hand: decoding each stretch of
trained tokens must give exactly the assistant texts that train, each with its
end-of-turn marker, and nothing else. Also: the tiny tokenizer and model, and
the model's loss seeing only trained positions.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from render_samples import (  # noqa: E402
    END,
    GAME,
    GAME_TRAINS,
    HEADER,
    MESSAGES,
    THINK_CODE,
    TOOL_CALL,
    afm_row,
    check_labels_are_ids_or_ignored,
    run_starts,
)  # fmt: skip

from factory.mask.render import IGNORE, render  # noqa: E402
from factory.mask.tiny import DEFAULT_SYSTEM, tiny_model, tiny_tokenizer  # noqa: E402
from train.show import trained_segments  # noqa: E402


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


# --- the tiny tokenizer and model ---------------------------------------------------------


def test_tiny_tokenizer_is_chatml_and_cached_on_disk(tmp_path):
    first = tiny_tokenizer(cache_dir=tmp_path)
    (saved,) = tmp_path.iterdir()
    stamp = (saved / "tokenizer.json").stat().st_mtime_ns
    second = tiny_tokenizer(cache_dir=tmp_path)
    assert (saved / "tokenizer.json").stat().st_mtime_ns == stamp and len(list(tmp_path.iterdir())) == 1
    assert first.get_vocab() == second.get_vocab() and 1000 <= len(first) <= 2000
    for special in ("<|im_start|>", END, "<|endoftext|>"):
        assert len(first(special, add_special_tokens=False).input_ids) == 1
    assert first.pad_token == "<|endoftext|>" and first.eos_token == END
    text = first.apply_chat_template(
        [{"role": "user", "content": "hi"}, {"role": "tool", "content": "ok"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == (
        f"<|im_start|>system\n{DEFAULT_SYSTEM}{END}\n<|im_start|>user\nhi{END}\n<|im_start|>tool\nok{END}\n" + HEADER
    )


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_tiny_model_matches_tokenizer_and_is_seeded(tok, arch):
    import torch

    model = tiny_model(tok, arch=arch)
    again = tiny_model(tok, arch=arch)
    assert model.config.model_type == arch and model.config.hidden_size == 64
    assert model.config.num_hidden_layers == 2 and model.config.vocab_size == len(tok)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))
    ids = torch.tensor([tok("Action: go to sink").input_ids])
    assert model(ids).logits.shape == (1, ids.shape[1], len(tok))


# --- masks, token by token -----------------------------------------------------------------


def test_sharegpt_trains_only_assistant_text_and_end_token(tok):
    rendered = render(GAME, tok)
    check_labels_are_ids_or_ignored(rendered)
    assert trained_segments(rendered, tok) == GAME_TRAINS
    for start in run_starts(rendered):  # the role header right before each trained run stays out
        assert tok.decode(rendered.input_ids[start - 3 : start]) == HEADER
    loss_false = rendered.turn_spans[2]  # system, user, assistant(loss=false)
    assert loss_false.role == "assistant" and loss_false.trained == 0
    assert "Action: go to hall" in tok.decode(rendered.input_ids[loss_false.start : loss_false.end])
    assert [s.trained > 0 for s in rendered.turn_spans] == [False, False, False, False, True, False, True]


def test_function_call_trains_observation_only_with_the_switch(tok):
    call = '{"name": "calc", "arguments": {"x": "2 + 3"}}'
    assert trained_segments(render(TOOL_CALL, tok), tok) == [call + END, "The answer is 5." + END]
    with_obs = render(TOOL_CALL, tok, train_on_observations=True)
    assert trained_segments(with_obs, tok) == [call + END, "5", "The answer is 5." + END]
    assert "You can call tools." in tok.decode(with_obs.input_ids)  # the row-level system prompt
    assert DEFAULT_SYSTEM not in tok.decode(with_obs.input_ids)


def test_messages_weight_zero_stays_in_context(tok):
    rendered = render(MESSAGES, tok)
    check_labels_are_ids_or_ignored(rendered)
    assert trained_segments(rendered, tok) == ["Action: go to kitchen" + END, "Yes." + END]
    assert "Action: go to hall" in tok.decode(rendered.input_ids)
    switched = render(MESSAGES, tok, train_on_observations=True)
    assert trained_segments(switched, tok) == ["The door is locked.", "Action: go to kitchen" + END, "Yes." + END]


def test_afm_observation_spans_are_masked_by_character_offsets(tok):
    row = afm_row()
    rendered = render(row, tok)
    check_labels_are_ids_or_ignored(rendered)
    # render_single's spans hold the observation block and the blank line after it (AFM's fork masks the same)
    assert trained_segments(rendered, tok) == [THINK_CODE, "<answer>\n5\n</answer>" + END]
    assert "<observation>\n5\n</observation>" in tok.decode(rendered.input_ids)
    assert trained_segments(render(row, tok, train_on_observations=True), tok) == [row["output"] + END]


def test_afm_without_spans_finds_observation_blocks_itself(tok):
    rendered = render(afm_row(spans=False), tok)  # the separators beside the observation stay out, as stored
    assert trained_segments(rendered, tok) == [THINK_CODE, "<answer>\n5\n</answer>" + END]


def test_a_token_straddling_a_span_edge_is_masked(tok):
    row = {"id": "s", "instruction": "Where?", "output": "<answer>kitchen</answer>", "observation_spans": [[10, 12]]}
    rendered = render(row, tok)
    # the tiny BPE cuts "kitchen" as k|itche|n: "itche" (chars 9-14) straddles the span 10-12
    assert trained_segments(rendered, tok) == ["<answer>k", "n</answer>" + END]


def test_store_prompt_completion_columns_render_like_afm(tok):
    row = afm_row()
    stored = {
        "prompt": row["instruction"],
        "completion": row["output"],
        "observation_spans": json.dumps(row["observation_spans"]),
    }
    assert render(stored, tok).labels == render(row, tok).labels


# --- the loss sees only trained positions ---------------------------------------------------------


def loss_and_grads(model, input_ids: list[int], labels: list[int]):
    import torch

    model.zero_grad()
    loss = model(input_ids=torch.tensor([input_ids]), labels=torch.tensor([labels])).loss
    loss.backward()
    return loss.detach(), [p.grad.detach().clone() for p in model.parameters()]


def same(a, b) -> bool:
    import torch

    return torch.allclose(a[0], b[0]) and all(torch.allclose(x, y) for x, y in zip(a[1], b[1]))


def with_turn(row: dict, index: int, value: str) -> dict:
    turns = [dict(turn) for turn in row["conversations"]]
    turns[index]["value"] = value
    return {**row, "conversations": turns}


def test_masked_turns_labels_do_not_reach_loss_or_gradients(tok):
    """Rows that differ only inside masked text give label sequences that must be interchangeable.

    The context is held fixed (row A's input_ids); only the labels come from the
    other row. If a loss=false turn or an observation leaked into the labels, the
    other row's different tokens there would change the loss and the gradients.
    """
    model = tiny_model(tok)
    cases = [
        (GAME, with_turn(GAME, 2, "Action: go to cup")),  # loss=false assistant turn: hall -> cup
        (GAME, with_turn(GAME, 5, "The cup is clean.")),  # observation in a human turn: dirty -> clean
        (afm_row("The cup is dirty."), afm_row("The cup is clean.")),  # AFM observation span
    ]
    for row_a, row_b in cases:
        a, b = render(row_a, tok), render(row_b, tok)
        assert len(a) == len(b) and a.input_ids != b.input_ids  # the rows differ, at the same positions
        base = loss_and_grads(model, a.input_ids, a.labels)
        assert same(base, loss_and_grads(model, a.input_ids, b.labels))
    # The control: the same swap inside a trained turn does move the loss.
    a, b = render(GAME, tok), render(with_turn(GAME, 4, "Action: go to cup"), tok)
    assert len(a) == len(b)
    assert not same(loss_and_grads(model, a.input_ids, a.labels), loss_and_grads(model, a.input_ids, b.labels))


def test_model_loss_is_the_mean_over_trained_tokens(tok):
    """Labels are aligned with input_ids (the model shifts them): the loss is the next-token
    cross-entropy averaged over exactly the trained positions."""
    import torch

    model = tiny_model(tok, arch="llama")
    rendered = render(afm_row(), tok)
    ids = torch.tensor([rendered.input_ids])
    with torch.no_grad():
        out = model(input_ids=ids, labels=torch.tensor([rendered.labels]))
    log_probs = torch.log_softmax(out.logits[0].float(), dim=-1)
    trained = [i for i, label in enumerate(rendered.labels) if label != IGNORE]
    manual = -torch.stack([log_probs[i - 1, rendered.input_ids[i]] for i in trained]).mean()
    assert torch.allclose(out.loss, manual, atol=1e-5)
