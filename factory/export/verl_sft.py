"""verl's multi-turn SFT dataset over the `openai` export's native rows: `data.custom_cls` for verl's trainer.

verl's own `MultiTurnSFTDataset` trains every assistant message and hands `tools` and each call's `arguments`
to the chat template as it reads them from Parquet; the export writes `tools` as JSON text (one Arrow
column cannot hold every row's schemas, and a struct column would fill absent keys with nulls that the
template then writes) and `arguments` as JSON text, as OpenAI does. This subclass, named in verl's config

    data:
      custom_cls: {path: "pkg://factory.export.verl_sft", name: NativeSFTDataset}

reads both as JSON, drops the keys Arrow filled in, and keeps a message's `weight` 0 out of the loss (a refine
mistake stays in context), so verl trains exactly factory.mask.render's tokens of the row (with the newline after
the end-of-turn marker, verl's rule: `render(..., train_turn_suffix=True)`;
tests/test_consumer_verl_native.py). It imports verl; nothing else in the factory imports it.
"""

from __future__ import annotations

import json
from typing import Any

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

from .native import arguments_object


class NativeSFTDataset(MultiTurnSFTDataset):
    def _read_files_and_process(self) -> None:
        super()._read_files_and_process()
        if self.tools is not None:
            self.tools = [json.loads(t) if isinstance(t, str) else t for t in self.tools]

    def _build_messages(self, example: dict) -> list[dict[str, Any]]:
        return [_plain(message) for message in super()._build_messages(example)]

    def _process_single_message(
        self, index: int, message: dict[str, Any], full_message: list, tools=None, enable_thinking=None
    ):
        input_ids, loss_mask, attention_mask, inputs = super()._process_single_message(
            index, message, full_message, tools, enable_thinking
        )
        if message["role"] == "assistant" and message.get("weight") == 0:
            loss_mask = loss_mask * 0
        return input_ids, loss_mask, attention_mask, inputs


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as a chat template takes it: no Arrow-filled None keys, a call's `arguments` an object."""
    out = {key: value for key, value in message.items() if value is not None}
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {**call, "function": {**call["function"], "arguments": arguments_object(call["function"].get("arguments"))}}
            for call in out["tool_calls"]
        ]
    return out
