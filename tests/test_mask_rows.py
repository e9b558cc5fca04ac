"""factory.mask.rows: rows the renderer must refuse or mask, and the AFM spans it finds itself."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from factory.coa.afm import make_blocks, render_single  # noqa: E402
from factory.mask.render import render  # noqa: E402
from factory.mask.rows import RenderError, observation_spans, row_messages  # noqa: E402
from factory.mask.tiny import tiny_tokenizer  # noqa: E402
from train.show import trained_segments  # noqa: E402

END = "<|im_end|>"
TOOL_CALL = {"id": "call", "type": "function", "function": {"name": "calc", "arguments": '{"x": "2 + 3"}'}}


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def test_a_tool_call_the_template_cannot_write_is_refused_naming_the_field(tok):
    """The tiny ChatML template has no tool branch: the call would vanish from the text (issue 27 renders
    tool calls through templates that write them, tests/test_export_native.py)."""
    row = {
        "id": "t1",
        "messages": [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
            {"role": "tool", "content": "5", "tool_call_id": "call"},
            {"role": "assistant", "content": "5"},
        ],
    }
    with pytest.raises(RenderError) as caught:
        render(row, tok)
    message = str(caught.value)
    assert message.startswith("row 't1': messages[1].tool_calls: ") and "\n" not in message
    with_text = {
        "id": "t2",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "calling", "tool_calls": [TOOL_CALL]},
        ],
    }
    with pytest.raises(RenderError, match=r"messages\[1\]\.tool_calls"):  # the text stays, the call would vanish
        render(with_text, tok)
    empty_list = {
        "id": "t3",
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "tool_calls": []}],
    }
    assert trained_segments(render(empty_list, tok), tok) == ["a" + END]


@pytest.mark.parametrize("empty", ["", "  \n"])
def test_an_empty_assistant_turn_never_trains(tok, empty):
    messages = {"id": "e1", "messages": [
        {"role": "user", "content": "Go."}, {"role": "assistant", "content": empty, "weight": 1},
        {"role": "user", "content": "Again."}, {"role": "assistant", "content": "Done.", "weight": 1},
    ]}  # fmt: skip
    null = {"id": "e2", "messages": [{"role": "user", "content": "Go."}, {"role": "assistant", "content": None}]}
    sharegpt = {"id": "e3", "conversations": [{"from": "human", "value": "Go."}, {"from": "gpt", "value": empty}]}
    afm = {"id": "e4", "instruction": "Go.", "output": empty}
    assert trained_segments(render(messages, tok), tok) == ["Done." + END]  # the empty turn stays in context only
    assert [m.trains for m in row_messages(messages)] == [False, False, False, True]
    for row in (null, sharegpt, afm):
        rendered = render(row, tok)
        assert rendered.trained_tokens == 0 and rendered.reason.startswith("no turn trains")


PAIRS = [("think", "Plan it."), ("code", "print(2 + 3)"), ("observation", "5"), ("observation", "again 5"),
         ("think", "Both say 5."), ("web_search", "2 + 3"), ("observation", "<b>five</b>"),
         ("answer", "5")]  # fmt: skip


@pytest.mark.parametrize("pairs", [PAIRS, PAIRS[2:], PAIRS[:-1]], ids=["middle", "first", "last"])
def test_fallback_spans_equal_the_spans_the_coa_renderer_stores(pairs):
    single = render_single("What is 2 + 3?", make_blocks(pairs))
    assert observation_spans(single.completion) == single.observation_spans
    (user, assistant) = row_messages({"id": "a", "instruction": single.prompt, "output": single.completion})
    assert assistant.observation_spans == single.observation_spans


def test_fallback_spans_of_a_non_canonical_completion_start_at_the_tag():
    output = "<think>x</think>\n\n<code>y</code>  <observation>z</observation>\n<answer>w</answer>"
    start, end = output.index("<observation>"), output.index("\n<answer>")
    assert observation_spans(output) == ((start, end),)


def test_fallback_and_stored_spans_train_the_same_tokens(tok):
    single = render_single("What is 2 + 3?", make_blocks(PAIRS))
    row = {"id": "a", "instruction": single.prompt, "output": single.completion}
    stored = {**row, "observation_spans": [list(span) for span in single.observation_spans]}
    assert render(row, tok).labels == render(stored, tok).labels
