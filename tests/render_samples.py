"""Shared rows and helpers for the factory/mask tests: one row of each export format, and label checks."""

from __future__ import annotations

from factory.coa.afm import make_blocks, render_single
from factory.mask.render import IGNORE
from factory.mask.rows import row_messages

END = "<|im_end|>"
HEADER = "<|im_start|>assistant\n"

GAME = {
    "id": "refine-1",
    "conversations": [
        {"from": "system", "value": "You play a text game."},
        {"from": "human", "value": "Put a clean cup in the cabinet."},
        {"from": "gpt", "value": "Action: go to hall", "loss": False},
        {"from": "human", "value": "Invalid action: the hall is locked."},
        {"from": "gpt", "value": "Action: go to sink"},  # no `loss`: a published row, gpt trains
        {"from": "human", "value": "The cup is dirty."},
        {"from": "gpt", "value": "Action: clean cup with sink", "loss": True},
    ],
    "source": "refine",
    "weight": 1.0,
}
GAME_TRAINS = ["Action: go to sink" + END, "Action: clean cup with sink" + END]

TOOL_CALL = {  # LLaMA-Factory sharegpt with tools, as published
    "conversations": [
        {"from": "human", "value": "What is 2 + 3?"},
        {"from": "function_call", "value": '{"name": "calc", "arguments": {"x": "2 + 3"}}'},
        {"from": "observation", "value": "5"},
        {"from": "gpt", "value": "The answer is 5."},
    ],
    "system": "You can call tools.",
}

MESSAGES = {
    "id": "m-1",
    "messages": [
        {"role": "system", "content": "Solve the task.", "weight": None},
        {"role": "user", "content": "Find the cup.", "weight": None},
        {"role": "assistant", "content": "Action: go to hall", "weight": 0},
        {"role": "tool", "content": "The door is locked.", "weight": None},
        {"role": "assistant", "content": "Action: go to kitchen", "weight": 1},
        {"role": "user", "content": "Done?"},
        {"role": "assistant", "content": "Yes."},  # no weight: trains
    ],
}

THINK_CODE = "<think>\nI should run code.\n</think>\n<code>\nprint(2 + 3)\n</code>\n"
AFM_BLOCKS = [("think", "I should run code."), ("code", "print(2 + 3)"), ("observation", "5"), ("answer", "5")]


def afm_row(observation: str = "5", spans: bool = True) -> dict:
    blocks = [(tag, observation if tag == "observation" else text) for tag, text in AFM_BLOCKS]
    single = render_single("What is 2 + 3? Use code.", make_blocks(blocks))
    row = {"id": "afm-1", "instruction": single.prompt, "input": "", "output": single.completion}
    if spans:
        row["observation_spans"] = [list(span) for span in single.observation_spans]
    return row


def chat_of(row: dict) -> list[dict]:
    return [{"role": m.role, "content": m.content} for m in row_messages(row)]


def run_starts(rendered) -> list[int]:
    labels = rendered.labels
    return [i for i, x in enumerate(labels) if x != IGNORE and (i == 0 or labels[i - 1] == IGNORE)]


def check_labels_are_ids_or_ignored(rendered) -> None:
    assert len(rendered.labels) == len(rendered.input_ids)
    for token_id, label in zip(rendered.input_ids, rendered.labels):
        assert label in (token_id, IGNORE)  # unshifted: a label is the token itself or ignored
