"""Native tool calls through Llama 3.1's public chat template (issue 27), read from the copy TRL installs
(trl/chat_templates/llama3_1.jinja; nothing is downloaded). Its layout differs from Qwen2.5's: the tools go
into the first user turn (so a system turn alone cannot be rendered), a call is written as
`{"name": ..., "parameters": ...}` with no text beside it, and a result is an `ipython` turn.

factory.mask.render lays such rows out (the leading system turn with the first user turn), trains the calls and
not the results or the mistakes, and refuses a row whose reasoning the template would drop; axolotl's own
chat_template strategy labels the same tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from consumer_harness import axolotl_samples

from factory.export.snippets import axolotl_dataset
from factory.mask.render import IGNORE, render
from factory.mask.rows import RenderError

trl = pytest.importorskip("trl")
TEMPLATE = Path(trl.__file__).parent / "chat_templates" / "llama3_1.jinja"
TOOLS = [{"type": "function", "function": {"name": "go", "description": "Walk somewhere.", "parameters": {
    "type": "object", "properties": {"place": {"type": "string", "enum": ["kitchen", "garden"]}},
    "required": ["place"]}}}]  # fmt: skip


def call(index: int, place: str) -> dict:
    return {"id": f"call_{index}", "type": "function",
            "function": {"name": "go", "arguments": json.dumps({"place": place})}}  # fmt: skip


def row(thought: str = "") -> dict:
    return {"id": "r", "tools": json.dumps(TOOLS), "messages": [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Go to the garden."},
        {"role": "assistant", "content": thought, "tool_calls": [call(1, "attic")], "weight": 0},
        {"role": "tool", "tool_call_id": "call_1", "name": "go", "content": "There is no attic."},
        {"role": "assistant", "content": "", "tool_calls": [call(2, "garden")], "weight": 1},
        {"role": "tool", "tool_call_id": "call_2", "name": "go", "content": "You are in the garden."},
        {"role": "assistant", "content": "I am in the garden.", "weight": 1}]}  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer():
    from factory.mask.tiny import tiny_tokenizer

    tok = tiny_tokenizer()  # with Llama 3's special tokens added, <|eot_id|> the end of a turn (as in Llama's own)
    tok.add_special_tokens({"additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>", "<|python_tag|>"],
                            "eos_token": "<|eot_id|>"})  # fmt: skip
    tok.chat_template = TEMPLATE.read_text()
    return tok


def test_render_lays_out_llama_tool_calls_and_trains_only_the_right_ones(tokenizer):
    rendered = render(row(), tokenizer)
    text = tokenizer.decode(rendered.input_ids)
    trained = tokenizer.decode([t for t, label in zip(rendered.input_ids, rendered.labels) if label != IGNORE])
    assert "Given the following functions" in text and '"name": "go"' in text  # the tools, in the first user turn
    assert '{"name": "go", "parameters": {"place": "garden"}}<|eot_id|>' in trained
    assert "attic" not in trained and "ipython" not in trained and "You are in the garden" not in trained
    assert trained.endswith("I am in the garden.<|eot_id|>")


def test_a_thought_the_template_would_drop_is_refused(tokenizer):
    with pytest.raises(RenderError, match=r"messages\[2\]\.content: the chat template drops the text"):
        render(row("The attic, maybe."), tokenizer)


def test_axolotl_labels_the_tokens_render_trains(tokenizer):
    sample = axolotl_samples(tokenizer, [row()], axolotl_dataset("rows"))[0]
    rendered = render(row(), tokenizer)
    assert list(sample["input_ids"]) == rendered.input_ids
    assert {i: x for i, x in enumerate(sample["labels"]) if x != IGNORE} == {
        i: x for i, x in enumerate(rendered.labels) if x != IGNORE
    }
